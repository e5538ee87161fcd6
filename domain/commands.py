"""What callers ask the use cases for: one attrs command per use case, each field describing itself once.

This is the one place a command is declared (the recipe in architecture.md, "A command"): a frozen attrs class
saying what it `Asks` for, each field with its `doc(...)` (domain/command_docs.py: the sentence, bounds and choices
a door shows). The doors build their arguments from these (the MCP tools in entrypoints/mcp/command_tools.py), and
the table of handlers (domain/dispatch.py) hands a command to its handler. Commands hold raw user input (strings for
enums and paths): the handler validates it, so every door refuses a bad value the same way. The commands are grouped
by subject: memories, maintenance, stores and categories, then the in-process batches, export and import.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from attrs import field, frozen

from agent_memory.domain.command_docs import doc
from agent_memory.domain.duplicates import DUPLICATE_POLICIES
from agent_memory.domain.model import MAX_CONTENT_CHARS, DecayPolicy, Memory
from agent_memory.domain.paging import MAX_DESCRIPTION, MAX_PAGE, MAX_RECENT
from agent_memory.domain.views import (
    CategorySummary,
    Duplicate,
    Export,
    ImportReport,
    Listing,
    MemoryView,
    Progress,
    PruneReport,
    ReindexReport,
    SearchResults,
    Status,
    StoreOutline,
    StoreSummary,
    quiet,
)

T = TypeVar("T", covariant=True)

SEARCH_MODES = ("hybrid", "semantic", "keyword")
DECAY_POLICIES = tuple(policy.value for policy in DecayPolicy)


class Asks(Generic[T]):
    """The base of every command: what its handler answers with, so `dispatch` is typed per command."""

    __slots__ = ()


# --- the sentences several commands share -----------------------------------------------------------------------
_REF = "The memory's path ('category/…/slug') or its id (a UUID)."
_STORE = "The store to use (lowercase letters, digits and '-'). Omit for the default store."
_NAMESPACE_GUARD = (
    'Act only within this namespace or below it, e.g. ["user", "u-123"]; a memory outside it is not found.'
)
_NAMESPACE_FILTER = 'Only this namespace and those below it, e.g. ["user", "u-123"].'
_ACT_ON_EXPIRED = "Act on the memory even if it has expired (refused with MEMORY_EXPIRED otherwise)."
_SEE_EXPIRED = "Include expired memories (hidden otherwise)."
_CATEGORY = "A category path such as 'projects' or 'projects/agent-memory'."
_DECAY = (
    "How confidence falls with age: stable (always 1.0, default), contextual (fades from creation) "
    "or reinforceable (fades from the last reinforce)."
)
CREATE_PATH = "Where it lives, 'category/…/slug' (made from content if omitted). A path given must be free."
# the path's sentence where a door requires it (the CLI's `add`, MCP's add_memory)
ADD_PATH = (
    "Where the memory lives: 'category/…/slug', at least two segments, e.g. 'preferences/editor'. "
    "Segments are normalised to lowercase slugs. It must be free."
)
_DESCRIPTION = f"What belongs in the category (at most {MAX_DESCRIPTION} characters)."


def _store() -> Any:
    return field(default=None, metadata=doc(_STORE))


def _guard() -> Any:
    return field(default=None, metadata=doc(_NAMESPACE_GUARD))


# --- memories ------------------------------------------------------------------------------------------------------
@frozen(kw_only=True)
class CreateMemory(Asks[MemoryView]):
    """A new memory; with a path, at that path, which must be free (DESTINATION_EXISTS otherwise), the store and
    categories coming into being as needed. decay_policy and path are strings so that every door validates them
    the same way."""

    content: str = field(metadata=doc("The memory's text.", max_length=MAX_CONTENT_CHARS))
    agent: str = field(default="", metadata=doc("The agent it belongs to (a scope)."))
    personality: str = field(default="", metadata=doc("The personality it belongs to (a scope)."))
    project: str = field(default="", metadata=doc("The project it belongs to (a scope)."))
    type: str = field(default="", metadata=doc("What kind of memory, e.g. 'preference', 'decision', 'fact'."))
    global_: bool = field(default=False, metadata=doc("Visible to every agent, personality and project."))
    decay_policy: str = field(default="stable", metadata=doc(_DECAY, choices=DECAY_POLICIES))
    store: str | None = _store()
    namespace: tuple[str, ...] = field(
        default=(), metadata=doc('The tenant labels it lives under, e.g. ["user", "u-123"]; omit for none.')
    )
    path: str | None = field(default=None, metadata=doc(CREATE_PATH))
    tags: tuple[str, ...] = field(default=(), metadata=doc("Labels to filter on."))
    source: str = field(default="", metadata=doc("Where the memory came from (free text)."))
    citations: tuple[str, ...] = field(
        default=(),
        metadata=doc('References to source material, e.g. ["src/core/types.ts:17", "https://docs.example.com"].'),
    )
    thread: str = field(
        default="", metadata=doc("The conversation or session it is part of: memories of one thread share context.")
    )
    expires_at: datetime | None = field(
        default=None,
        metadata=doc(
            "ISO 8601 time after which the memory is hidden, e.g. 2026-12-31T23:59:00Z (one already past hides it "
            "at once)."
        ),
    )
    created_at: datetime | None = field(default=None, metadata=doc("When it was made (ISO 8601; default now)."))
    on_duplicate: str | None = field(
        default=None,
        metadata=doc(
            "What to do when a live memory of the same namespace and scope already says this (a near-duplicate, "
            "named in the answer): keep (store both), skip (store nothing, answer with the existing memory) or "
            "update (put this text in the existing memory, answer with it); omit for the on_duplicate setting "
            "(default keep).",
            choices=DUPLICATE_POLICIES,
        ),
    )
    idempotency_key: str | None = field(
        default=None,
        metadata=doc(
            "A key of your choosing (a UUID, say) that makes a retry safe: a create repeated with the same key "
            "answers the memory the first stored and stores nothing twice; the same key with other fields is refused."
        ),
    )


@frozen(kw_only=True)
class SearchMemories(Asks[SearchResults]):
    """A search: a query, the scope filters, a page (limit hits after `offset`) and a confidence floor (None = the
    defaults)."""

    query: str = field(metadata=doc("What to look for, in natural language or keywords."))
    agent: str | None = field(default=None, metadata=doc("Only memories of this agent."))
    personality: str | None = field(default=None, metadata=doc("Only memories of this personality."))
    project: str | None = field(default=None, metadata=doc("Only memories of this project."))
    type: str | None = field(default=None, metadata=doc("Only memories of this type, e.g. 'preference'."))
    global_: bool | None = field(default=None, metadata=doc("true: only global memories; false: only non-global."))
    tags: tuple[str, ...] = field(default=(), metadata=doc("Only memories having all these tags."))
    namespace: tuple[str, ...] | None = field(default=None, metadata=doc(_NAMESPACE_FILTER))
    path_prefix: str | None = field(default=None, metadata=doc("Only memories under this category."))
    limit: int | None = field(default=None, metadata=doc("Most results (default 10).", least=1, most=MAX_PAGE))
    offset: int = field(default=0, metadata=doc("Results to skip, for paging.", least=0, most=MAX_PAGE - 1))
    min_confidence: float | None = field(
        default=None, metadata=doc("Confidence floor, 0 to 1 (default 0.3).", least=0.0, most=1.0)
    )
    min_similarity: float | None = field(
        default=None,
        metadata=doc(
            "Relevance floor, 0 to 1: when no hit's similarity reaches it, nothing is related and the search "
            "finds nothing (the model's own rule also drops unrelated hits); default: the min_similarity setting "
            "(0.2; 0: every relevance judgement off, the nearest memories however unrelated).",
            least=0.0,
            most=1.0,
        ),
    )
    store: str | None = _store()
    include_expired: bool = field(default=False, metadata=doc(_SEE_EXPIRED))
    mode: str = field(
        default="hybrid",
        metadata=doc(
            "hybrid (meaning and keywords), semantic (meaning only) or keyword (words only).", choices=SEARCH_MODES
        ),
    )


@frozen(kw_only=True)
class UpdateMemory(Asks[MemoryView]):
    """Changes to one memory (by id or path). None keeps a field; citations=() clears them (decision 12)."""

    ref: str = field(metadata=doc(_REF))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()
    content: str | None = field(default=None, metadata=doc("New text; omit to keep it.", max_length=MAX_CONTENT_CHARS))
    tags: tuple[str, ...] | None = field(default=None, metadata=doc("Replaces the tags; [] clears them; omit to keep."))
    source: str | None = field(default=None, metadata=doc("New source; omit to keep it."))
    citations: tuple[str, ...] | None = field(
        default=None, metadata=doc("Replaces the citations; [] clears them; omit to keep them.")
    )
    expires_at: datetime | None = field(
        default=None,
        metadata=doc("New expiry (ISO 8601; without a time zone it is UTC; one already past hides it at once)."),
    )
    clear_expiry: bool = field(default=False, metadata=doc("Remove the expiry date."))
    agent: str | None = field(default=None, metadata=doc("New agent scope; omit to keep it."))
    personality: str | None = field(default=None, metadata=doc("New personality scope; omit to keep it."))
    project: str | None = field(default=None, metadata=doc("New project scope; omit to keep it."))
    type: str | None = field(default=None, metadata=doc("New type; omit to keep it."))
    global_: bool | None = field(default=None, metadata=doc("Make the memory global (true) or not (false)."))
    decay_policy: str | None = field(
        default=None, metadata=doc("New decay policy; omit to keep it.", choices=DECAY_POLICIES)
    )
    include_expired: bool = field(default=False, metadata=doc(_ACT_ON_EXPIRED))


@frozen(kw_only=True)
class GetMemory(Asks[MemoryView]):
    """Read one live memory with its confidence now."""

    ref: str = field(metadata=doc(_REF))
    store: str | None = _store()
    include_expired: bool = field(default=False, metadata=doc(_SEE_EXPIRED))
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class ListMemories(Asks[Listing]):
    """One page of a category's memories (recursively, newest first) with the total and its subcategories."""

    category: str | None = field(default=None, metadata=doc("The category to list; omit for the whole store."))
    store: str | None = _store()
    include_expired: bool = field(default=False, metadata=doc(_SEE_EXPIRED))
    include_deleted: bool = field(
        default=False, metadata=doc("Include soft-deleted memories (each marked deleted), which restore brings back.")
    )
    namespace: tuple[str, ...] | None = _guard()
    limit: int | None = field(default=None, metadata=doc("Most memories to list.", least=1, most=MAX_PAGE))
    offset: int = field(default=0, metadata=doc("Memories to skip, for paging (see total).", least=0))


@frozen(kw_only=True)
class RecentMemories(Asks[tuple[MemoryView, ...]]):
    """The most recently updated memories, newest first."""

    limit: int = field(default=5, metadata=doc(f"How many, 1 to {MAX_RECENT}.", least=1, most=MAX_RECENT))
    category: str | None = field(default=None, metadata=doc("Only memories under this category."))
    store: str | None = _store()
    include_expired: bool = field(default=False, metadata=doc(_SEE_EXPIRED))
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class MoveMemory(Asks[MemoryView]):
    """Give a memory a new path; DESTINATION_EXISTS if it is taken."""

    ref: str = field(metadata=doc(_REF))
    destination: str = field(metadata=doc("The new path, 'category/…/slug'. It must be free."))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()
    include_expired: bool = field(default=False, metadata=doc(_ACT_ON_EXPIRED))


@frozen(kw_only=True)
class ReinforceMemory(Asks[MemoryView]):
    """Reset the decay of a memory whose decay policy is 'reinforceable' (it is being used)."""

    ref: str = field(metadata=doc("The id (or path) of a memory with decay policy 'reinforceable'."))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class DeleteMemory(Asks[Memory]):
    """Soft delete: the memory stays stored, marked deleted, and never surfaces again."""

    ref: str = field(metadata=doc(_REF))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()
    include_expired: bool = field(default=False, metadata=doc(_ACT_ON_EXPIRED))


@frozen(kw_only=True)
class RestoreMemory(Asks[MemoryView]):
    """Undo a soft delete: the memory comes back with its id and every field as they were; DESTINATION_EXISTS if a
    live memory has taken its path since."""

    ref: str = field(
        metadata=doc(
            "The soft-deleted memory's id (a UUID) or its path ('category/…/slug'); list it with include_deleted."
        )
    )
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class FindDuplicates(Asks[tuple[Duplicate, ...]]):
    """The live memories of a memory's namespace and scope that say what it says: the near-duplicates a create of
    its text would find (the embedding model's threshold), most similar first, each with its id, path and
    similarity; none when the model carries no threshold."""

    ref: str = field(metadata=doc(_REF))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class RemoveMemory(Asks[Memory]):
    """Delete a memory for good."""

    ref: str = field(metadata=doc(_REF))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


# --- maintenance ---------------------------------------------------------------------------------------------------
@frozen(kw_only=True)
class PruneMemories(Asks[PruneReport]):
    """Delete every expired memory of a store for good."""

    store: str | None = _store()
    dry_run: bool = field(default=False, metadata=doc("Only list the expired memories that would be deleted."))
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class ReindexStore(Asks[ReindexReport]):
    """Re-embed every memory of a store (after an embedding-model change or hand-edited files)."""

    store: str | None = _store()
    progress: Progress = field(
        default=quiet, eq=False, metadata=doc("Called with (done, total) after each slice embedded.")
    )


@frozen(kw_only=True)
class StoreStatus(Asks[Status]):
    """Reach the backend, count a store's memories and verify its indexes."""

    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


# --- stores and categories -----------------------------------------------------------------------------------------
@frozen(kw_only=True)
class ListStores(Asks[tuple[StoreSummary, ...]]):
    """Every store with its memory count."""

    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class CreateStore(Asks[StoreSummary]):
    """Create an empty store; DESTINATION_EXISTS if it exists."""

    name: str = field(metadata=doc("The new store's name, e.g. 'work-notes'."))


@frozen(kw_only=True)
class CreateCategory(Asks[CategorySummary]):
    """Create a category (nothing changes if it exists), optionally with a description."""

    category: str = field(metadata=doc(_CATEGORY))
    description: str = field(default="", metadata=doc(_DESCRIPTION, max_length=MAX_DESCRIPTION))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class DescribeCategory(Asks[CategorySummary]):
    """Set a category's description."""

    category: str = field(metadata=doc(_CATEGORY))
    description: str = field(metadata=doc(_DESCRIPTION, max_length=MAX_DESCRIPTION))
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


@frozen(kw_only=True)
class DeleteCategory(Asks[CategorySummary]):
    """Delete a category with its subcategories: its memories are soft-deleted (restorable, counted as deleted), or
    with purge removed for good, soft-deleted ones too. memory_count says how many."""

    category: str = field(metadata=doc(_CATEGORY))
    purge: bool = field(
        default=False,
        metadata=doc(
            "Remove its memories for good, soft-deleted ones too (they cannot be restored); omit to soft-delete."
        ),
    )
    store: str | None = _store()
    namespace: tuple[str, ...] | None = _guard()


# --- batches, export and import (in-process: their fields are records, not a caller's words) ---------------------
@frozen(kw_only=True)
class CreateMemories(Asks[list[MemoryView]]):
    """Many new memories in one batch: all validated before any is written, embedded a slice at a time, and each
    store's part written as one unit (a failure or a kill part-way leaves none of it)."""

    memories: tuple[CreateMemory, ...] = field(metadata=doc("The memories to create, each as `create` takes one."))
    progress: Progress = field(
        default=quiet, eq=False, metadata=doc("Called with (done, total) after each slice embedded.")
    )


@frozen(kw_only=True)
class ExportMemories(Asks[Export]):
    """Every memory of the given stores with all its fields (soft-deleted and expired ones too), after each store's
    outline (its registered categories and their descriptions)."""

    stores: tuple[str, ...] | None = field(default=None, metadata=doc("The stores to export; omit for all."))


@frozen(kw_only=True)
class ImportMemories(Asks[ImportReport]):
    """Outlined stores and their categories made, then memories written exactly as given (ids, timestamps, flags);
    an id already present is replaced. Idempotent; each store's part is one unit."""

    outlines: tuple[StoreOutline, ...] = field(default=(), metadata=doc("The stores and categories to make."))
    memories: tuple[Memory, ...] = field(default=(), metadata=doc("The memories to write, as export gives them."))
    progress: Progress = field(
        default=quiet, eq=False, metadata=doc("Called with (done, total) after each batch written.")
    )


Command = Asks[Any]  # any command; the table of handlers (domain/dispatch.py) lists them
