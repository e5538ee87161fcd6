"""Pages of listings and searches: the bounds a page's limit and offset keep, checked the same at every door."""

from __future__ import annotations

MAX_PAGE = 1000  # the most memories one page of a listing or search shows
MAX_RECENT = 100  # the most memories `recent` shows
MAX_DESCRIPTION = 500  # the most characters of a category description


def page_problem(limit: object, offset: object, most: int, *, unlimited: bool = False) -> str | None:
    """What is wrong with a page's limit (1 … most; None too when `unlimited`) and offset (≥ 0), or None."""
    bounded = isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= most
    if not bounded and not (unlimited and limit is None):
        return f"limit must be a whole number from 1 to {most}, got {limit!r}."
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return f"offset must be a whole number of at least 0, got {offset!r}."
    return None
