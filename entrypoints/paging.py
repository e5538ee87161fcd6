"""Paging shared by the doors: one page of a search, and the compact listing agents browse with."""

from __future__ import annotations

from typing import Any

import attrs
from attrs import frozen
from returns.result import Failure, Result

from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.model import ScoredMemory
from agent_memory.domain.searching import MAX_SEARCH_LIMIT
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import Listing, MemoryView
from agent_memory.entrypoints import json_codec as out


@frozen
class SearchPage:
    """Hits offset … offset + limit of a search, and whether more qualify after them."""

    results: tuple[ScoredMemory, ...]
    limit: int
    offset: int
    has_more: bool


def page_problem(limit: object, offset: object, most: int) -> str | None:
    """What is wrong with a page's limit and offset (limit 1 … most, offset ≥ 0), or None."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        return f"limit must be a whole number from 1 to {most}, got {limit!r}."
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return f"offset must be a whole number of at least 0, got {offset!r}."
    return None


def search_page(service: MemoryService, command: SearchMemories, offset: int) -> Result[SearchPage, DomainError]:
    """One page of a search: the service ranks offset + limit + 1 hits (at most the search limit, 1000), the page
    is the slice, and the one beyond it says whether there are more. A search ranks everything that passes its
    filters, so a total would cost a search of the whole store on every call: `has_more` says what paging needs."""
    limit = service.policy.default_limit if command.limit is None else command.limit
    problem = page_problem(limit, offset, MAX_SEARCH_LIMIT)
    if problem is None and limit + offset > MAX_SEARCH_LIMIT:
        problem = f"limit + offset must be at most {MAX_SEARCH_LIMIT}, got {limit + offset}: narrow the search."
    if problem is not None:
        return Failure(invalid_input(problem))
    window = limit + offset
    asked = min(window + 1, MAX_SEARCH_LIMIT)
    return service.search(attrs.evolve(command, limit=asked)).map(
        lambda found: SearchPage(found.results[offset:window], limit, offset, len(found.results) > window)
    )


def search_page_json(page: SearchPage) -> dict[str, Any]:
    """The search JSON (results with similarity, confidence and score; count) plus the page's place."""
    return {
        "results": [out.scored_json(hit) for hit in page.results],
        "count": len(page.results),
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.has_more,
    }


def token_estimate(text: str) -> int:
    """Roughly how many model tokens a text costs: a quarter of its characters (at least 1)."""
    return max(1, (len(text) + 3) // 4)


def compact_json(view: MemoryView) -> dict[str, Any]:
    """A memory in a listing: enough to pick it (path, id, size, freshness), its content left to get_memory."""
    memory = view.memory
    return {
        "path": None if memory.path is None else str(memory.path),
        "id": memory.id,
        "tokens": token_estimate(memory.content),
        "updated_at": out.iso_z(memory.updated_at),
    }


def listing_page_json(listing: Listing, limit: int, offset: int, *, compact: bool) -> dict[str, Any]:
    """One page of a category's memories with the total, and its subcategories (compact: no content)."""
    shown = attrs.evolve(listing, memories=listing.memories[offset : offset + limit])
    body = out.listing_json(shown)
    if compact:
        body["memories"] = [compact_json(view) for view in shown.memories]
    return {**body, "total": len(listing.memories), "limit": limit, "offset": offset}
