"""Requests of bounded size: a sequence cut into consecutive slices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """Consecutive slices of at most `size` items (at least one item each), in order; none for no items."""
    step = max(1, size)
    return [items[start : start + step] for start in range(0, len(items), step)]
