"""Pages as the doors show them: a search page's JSON, and the compact listing agents browse with."""

from __future__ import annotations

from typing import Any

from attrs import frozen
from returns.result import Result

from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import ScoredMemory
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import Listing, MemoryView, SearchResults
from agent_memory.entrypoints import json_codec as out


@frozen
class SearchPage:
    """Hits offset … offset + limit of a search, and whether more qualify after them."""

    results: tuple[ScoredMemory, ...]
    limit: int
    offset: int
    has_more: bool
    broad: bool = False  # the question named no subject: the scope's memories by what matters (SearchResults.broad)


def search_page(service: MemoryService, command: SearchMemories) -> Result[SearchPage, DomainError]:
    """One page of a search (the use case pages: domain.search.searching), with the limit it used."""
    return dispatch(service, command).map(lambda found: page_of(command, found))


def page_of(command: SearchMemories, found: SearchResults) -> SearchPage:
    """The page a search answered, with the limit it used (the search says which: the policy's default when the
    command gave none)."""
    return SearchPage(found.results, found.limit, command.offset, found.has_more, found.broad)


def search_page_json(page: SearchPage) -> dict[str, Any]:
    """The search JSON (results with relevance, similarity, confidence and score; count; broad) plus the page's
    place."""
    return {
        "results": [out.scored_json(hit) for hit in page.results],
        "count": len(page.results),
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.has_more,
        "broad": page.broad,
    }


def token_estimate(text: str) -> int:
    """Roughly how many model tokens a text costs: a quarter of its characters (at least 1)."""
    return max(1, (len(text) + 3) // 4)


def compact_json(view: MemoryView) -> dict[str, Any]:
    """A memory in a listing: enough to pick it (path, id, size, freshness), its content left to get_memory."""
    memory = view.memory
    body = {
        "path": None if memory.path is None else str(memory.path),
        "id": memory.id,
        "tokens": token_estimate(memory.content),
        "updated_at": out.iso_z(memory.updated_at),
    }
    return body | {"deleted": True} if memory.deleted else body  # listed with include_deleted: restorable


def listing_page_json(listing: Listing, limit: int | None, offset: int, *, compact: bool) -> dict[str, Any]:
    """One page of a category's memories with the total, and its subcategories (compact: no content)."""
    body = out.listing_json(listing)
    if compact:
        body["memories"] = [compact_json(view) for view in listing.memories]
    return {**body, "total": listing.total, "limit": limit, "offset": offset}
