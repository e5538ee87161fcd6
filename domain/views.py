"""What the use cases return: memories with their computed confidence, search results, status."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from attrs import field, frozen

from agent_memory.domain.model import Memory, ScoredMemory


@frozen(kw_only=True)
class Duplicate:
    """A live memory of the same scope that says what a new one says (domain.duplicates): its id, path, and the
    cosine similarity of the two texts on the embedding model's scale."""

    id: str
    path: str | None
    similarity: float


@frozen
class MemoryView:
    """A memory as read now: the stored record plus its confidence at the time of reading.

    A create's answer also names the near-duplicates it found (domain.duplicates), most similar first, and what
    it did about them (`on_duplicate`: kept, skipped or updated; "" when it found none)."""

    memory: Memory
    confidence: float
    duplicates: tuple[Duplicate, ...] = field(default=(), kw_only=True)
    on_duplicate: str = field(default="", kw_only=True)


@frozen
class SearchResults:
    """One page of a search's hits, best first, whether more qualify after them, and the limit the page had.

    A search ranks everything that passes its filters, so a total would cost ranking the whole store on every
    call; `has_more` is what paging needs. `limit` is the most hits the page could hold: the command's limit, or
    the policy's default when it gave none (a door shows it without knowing the policy). `broad`: the question
    named no subject of its own and nothing was related to it, so the hits are the scope's memories ranked by
    what matters (confidence, then the latest touched), not by relevance (domain.search.relevance)."""

    results: tuple[ScoredMemory, ...]
    has_more: bool = False
    limit: int = field(kw_only=True)
    broad: bool = field(default=False, kw_only=True)

    @property
    def count(self) -> int:
        return len(self.results)


@frozen
class Status:
    """A reachable backend: its name, how many live memories the store holds (and how many soft-deleted and
    expired ones beside them), where it lives, what keeps it from fully working (problems: degraded) and what
    works but wants attention (warnings: still healthy)."""

    backend: str
    store: str
    memory_count: int  # live: neither soft-deleted nor expired
    location: Mapping[str, str]
    problems: tuple[str, ...] = ()  # what verification found out of step, each with the command that repairs it
    deleted_count: int = 0
    expired_count: int = 0  # expired and not soft-deleted (a soft-deleted one counts as deleted only)
    warnings: tuple[str, ...] = ()  # advisories (an index that lags, a batch rolled back), each saying what to run


@frozen
class Census:
    """A store's (or a namespace's) memories by state: live, soft-deleted, expired."""

    live: int
    deleted: int
    expired: int


@frozen
class CategorySummary:
    """A category directly under the one listed: how many memories lie under it, its description."""

    path: str
    memory_count: int
    description: str


@frozen
class Listing:
    """A page of a category's memories (recursively, newest update first), how many there are in all, and its
    direct subcategories."""

    category: str | None
    memories: tuple[MemoryView, ...]
    subcategories: tuple[CategorySummary, ...]
    description: str = ""
    total: int = 0  # memories under the category in all, whatever the page shows


@frozen
class PruneReport:
    """The expired memories a prune removed (or, in a dry run, would remove)."""

    dry_run: bool
    memories: tuple[Memory, ...]


@frozen
class ReindexReport:
    """How many memories a reindex re-embedded, and with which model."""

    store: str
    memory_count: int
    embedding_model: str
    renamed: tuple[str, ...] = ()  # "old → new" for memories moved off a path another memory held
    rolled_back: tuple[str, ...] = ()  # interrupted batches taken back out before the reindex, said in words


@frozen
class StoreSummary:
    """A store and how many memories it holds: live ones (neither soft-deleted nor expired), and the others."""

    name: str
    memory_count: int  # live, as Status.memory_count
    deleted_count: int = 0
    expired_count: int = 0


# (memories done, memories in all), called after each batch of an import, a batch create or a reindex: the counts
# only grow and the last call has done == total. A Progress must not raise (an import calls it inside its unit of
# writes); the CLI's bar swallows a failed write to its terminal.
Progress = Callable[[int, int], None]


def quiet(_done: int, _total: int) -> None:
    """The progress of a batch nobody watches."""
    return None


@frozen
class ImportReport:
    """How many memories an import created and how many it replaced (same id seen before), and how many stores
    its outlines made or confirmed."""

    created: int
    replaced: int
    stores: int = 0


@frozen
class StoreOutline:
    """What export carries of a store beside its memories: its name and registered categories (path → description).

    It is how an empty store, an empty category and every category description survive a move between backends.
    """

    name: str
    categories: Mapping[str, str]


@frozen
class Export:
    """What export gives: each store's outline, then every memory of those stores (in creation order per store)."""

    outlines: tuple[StoreOutline, ...]
    memories: tuple[Memory, ...]
