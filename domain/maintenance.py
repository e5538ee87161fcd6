"""The upkeep handlers: status (counts and index checks), prune of expired memories, reindex of a store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.batch_units import recover
from agent_memory.domain.commands import PruneMemories, ReindexStore, StoreStatus
from agent_memory.domain.context import Context, keyword_entry
from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_store_name
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import PendingBatch, VectorStore
from agent_memory.domain.progress import EMBED_SLICE, Count, embedded
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.tenancy import Guard, guarded_only
from agent_memory.domain.views import Census, Progress, PruneReport, ReindexReport, Status


def store_status(ctx: Context, command: StoreStatus) -> Result[Status, DomainError]:
    """Reach the backend, count the store's live memories (and its soft-deleted and expired ones beside
    them) and verify the indexes: what keeps the store from fully working is a problem, what works but wants a
    command run (an index that lags, a batch rolled back just now) a warning.

    Under a namespace only its memories are counted, and the store-wide checks (whose findings name other
    tenants' files and counts) are left to the operator."""
    name, steps = command.store or ctx.policy.default_store, Maintenance(ctx)

    def told(status: Status, recovered: Result[tuple[str, ...], DomainError]) -> Status:
        """A batch rolled back just now is a warning (the store works); one that cannot be yet, a problem."""
        match recovered:
            case Success(said):
                return evolve(status, warnings=(*said, *status.warnings))
            case Failure(error):
                stuck = f"An interrupted batch could not be rolled back yet: {error.message}"
                return evolve(status, problems=(stuck, *status.problems))
        return status  # pragma: no cover - a Result is a Success or a Failure

    def checked(guard: Guard) -> Result[Status, DomainError]:
        recovered = steps._recovered(name)  # first: the status then counts the store as the rollback left it
        return steps._status_of(name, guard).map(lambda status: told(status, recovered))

    return ctx.guard(command.namespace).bind(checked)


def prune_memories(ctx: Context, command: PruneMemories) -> Result[PruneReport, DomainError]:
    """Remove every expired memory (of the namespace, under one) for good; a dry run only lists them."""
    now, dry_run = ctx.clock.now(), command.dry_run

    def expired_ones(opened: VectorStore) -> Result[PruneReport, DomainError]:
        scanned = ctx.guard(command.namespace).bind(
            lambda guard: opened.scan(MemoryFilter(include_deleted=True, namespace=guard))
        )
        return scanned.bind(
            lambda memories: Maintenance(ctx)._pruned(
                opened, tuple(m for m in memories if m.is_expired(now)), dry_run=dry_run
            )
        )

    def listed() -> Result[PruneReport, DomainError]:
        return ctx.open(command.store, create=False).bind(expired_ones)

    # a dry run only reads: it takes no write lock (and so, on a fresh data dir, creates no lock file)
    return listed() if dry_run else ctx.exclusive(command.store, listed)


def reindex_store(ctx: Context, command: ReindexStore) -> Result[ReindexReport, DomainError]:
    """Re-embed every memory of the store with the configured embedder, replacing the index at once. Progress
    counts the memories embedded, a slice at a time; nothing is written before the last slice is embedded."""
    name, steps = command.store or ctx.policy.default_store, Maintenance(ctx)

    def scan_and_rebuild(opened: VectorStore) -> Result[ReindexReport, DomainError]:
        return opened.scan(MemoryFilter(include_deleted=True)).bind(
            lambda memories: steps._rebuilt(name, opened, memories, command.progress)
        )

    def fenced(opened: VectorStore) -> Result[ReindexReport, DomainError]:
        """Creates that commit without the lock (a referee's) are decided first and wait for the lock meanwhile:
        none lands in the store being replaced after its scan."""
        referee = ctx.referee
        if referee is None:
            return scan_and_rebuild(opened)
        return referee.fence(name).bind(
            lambda _: (
                scan_and_rebuild(opened)
                .lash(lambda error: referee.unfence(name).bind(lambda _: Failure(error)))
                .bind(lambda report: referee.unfence(name).map(lambda _: report))
            )
        )

    return ctx.exclusive(
        name,
        lambda: (
            guarded_only(
                ctx.tenant,
                "reindex",
                "memory reindex" + ("" if name == ctx.policy.default_store else f" --store {name}"),
            )
            .bind(lambda _: steps._recovered(name))
            .bind(
                lambda said: (
                    ctx.open(name, create=False).bind(fenced).map(lambda report: evolve(report, rolled_back=said))
                )
            )
        ),
    )


@frozen
class Maintenance:
    """The steps of status, prune and reindex."""

    ctx: Context

    # --- status -----------------------------------------------------------------------------

    def _recovered(self, name: str) -> Result[tuple[str, ...], DomainError]:
        """Roll back the store's interrupted batches now, so that status and reindex can say so."""
        return validated(lambda: check_store_name(name)).bind(partial(recover, self.ctx)).map(rolled_back)

    def _status_of(self, name: str, guard: Guard) -> Result[Status, DomainError]:
        def report(location: Mapping[str, str], opened: VectorStore) -> Result[Status, DomainError]:
            if guard is None:
                return self._verified(opened, name, location)
            return self._census(opened, guard).map(
                lambda census: _status(self.ctx.catalog.backend, name, census, location, ())
            )

        return self.ctx.catalog.health().bind(
            lambda location: self.ctx.open(name, create=False).bind(lambda opened: report(location, opened))
        )

    def _verified(self, opened: VectorStore, name: str, location: Mapping[str, str]) -> Result[Status, DomainError]:
        """The store's status; with damage found, counts cannot agree until it is fixed, so only the damage is said.
        One scan gives the counts and the long memories whose parts are checked."""
        return Result.do(
            evolve(
                _status(
                    self.ctx.catalog.backend,
                    name,
                    self.ctx.tally(memories),
                    location,
                    damage or self._problems(name, model),
                ),
                warnings=advice if damage else (*advice, *self._lagging(name, count), *self._unparted(name, memories)),
            )
            for count in opened.count()
            for memories in opened.scan(MemoryFilter(include_deleted=True))
            for model in opened.embedding_model()
            for damage in opened.problems()
            for advice in opened.advisories()
        )

    def _census(self, opened: VectorStore, guard: Guard) -> Result[Census, DomainError]:
        return self.ctx.census(opened, guard)

    def _repair(self, store: str) -> str:
        default = store == self.ctx.policy.default_store
        return "run `memory reindex`" if default else f"run `memory reindex --store {store}`"

    def _problems(self, store: str, model: str | None) -> tuple[str, ...]:
        """What keeps a readable store from fully working (writes refused, keyword search failing), with what to run."""
        embedder, keywords = self.ctx.embedder, self.ctx.keywords
        found: list[str] = []
        if model is not None and model != embedder.name:
            found.append(
                f"The store was embedded with '{model}' but '{embedder.name}' is configured: {self._repair(store)}."
            )
        if keywords is not None:
            match keywords.count(store):
                case Failure(error):
                    found.append(
                        f"The keyword index cannot be read ({error.cause or error.message}): {self._repair(store)}."
                    )
        return tuple(found)

    def _lagging(self, store: str, count: int) -> tuple[str, ...]:
        """A keyword index that works but holds another number of memories than the store (a crash between the two
        writes): search still works, and misses or keeps a few until a reindex."""
        keywords = self.ctx.keywords
        if keywords is None:
            return ()
        match keywords.count(store):
            case Success(indexed) if indexed != count:
                return (f"The keyword index holds {indexed} of the {count} memories: {self._repair(store)}.",)
        return ()

    def _unparted(self, store: str, memories: Sequence[Memory]) -> tuple[str, ...]:
        """Live memories longer than the model's window without parts (stored before parts existed, or their parts
        lost): their text past the first window is not searchable until a reindex. The parts index says which have
        parts (a lookup by id), the embedder which of the others are long: its tokenizer at most, no model run, and
        not even that for a text too short to be; a long memory that has its parts is never tokenised (measured in
        BENCHMARKS.md). A check that fails is a warning too: the store works."""
        parts = self.ctx.parts
        if parts is None:
            return ()
        now = self.ctx.clock.now()
        live = [m for m in memories if not m.deleted and not m.is_expired(now)]
        missing: Result[list[str], DomainError] = Result.do(
            [m.id for m, is_long in zip(unheld, long, strict=True) if is_long]
            for held in (parts.holding(store, [m.id for m in live]) if live else Success(set[str]()))
            for unheld in Success([m for m in live if m.id not in held])
            for long in self.ctx.embedder.needs_parts([m.content for m in unheld])
        )
        match missing:
            case Success([_]):
                return (
                    f"1 long memory has no parts: its text past the first window is not searchable; "
                    f"{self._repair(store)} to add it.",
                )
            case Success([_, *_] as found):
                return (
                    f"{len(found)} long memories have no parts: their text past the first window is not searchable; "
                    f"{self._repair(store)} to add them.",
                )
            case Failure(error):
                return (f"Whether long memories have their parts could not be checked: {error.message}",)
        return ()

    # --- prune --------------------------------------------------------------------------------

    def _pruned(
        self, opened: VectorStore, expired: tuple[Memory, ...], *, dry_run: bool
    ) -> Result[PruneReport, DomainError]:
        if dry_run or not expired:
            return Success(PruneReport(dry_run, expired))
        ids = [m.id for m in expired]
        return (
            opened.remove(ids)
            .bind(lambda _: self.ctx.unindex_keywords(expired[0].store, ids))
            .map(lambda _: PruneReport(False, expired))
        )

    # --- reindex ------------------------------------------------------------------------------

    def _rebuilt(
        self, name: str, opened: VectorStore, found: list[Memory], progress: Progress
    ) -> Result[ReindexReport, DomainError]:
        embedder = self.ctx.embedder
        memories, renamed = one_memory_per_path(found)
        vectors = embedded(embedder, [m.content for m in memories], Count(len(memories), progress))
        return (
            vectors.bind(lambda found_vectors: opened.rebuild(memories, found_vectors, embedder.name))
            .bind(lambda _: self._rebuild_keywords(name, memories))
            .bind(lambda _: self._rebuild_parts(name, memories))
            .map(lambda _: ReindexReport(name, len(memories), embedder.name, renamed))
        )

    def _rebuild_keywords(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        keywords = self.ctx.keywords
        if keywords is None:
            return Success(None)
        known: Result[Mapping[str, tuple[str | None, str | None]], DomainError] = keywords.neighbours(
            store, [m.id for m in memories]
        )
        return known.lash(lambda _: Success({})).bind(  # an unreadable index: creation order alone
            lambda links: keywords.rebuild(store, [keyword_entry(m) for m in saved_order(memories, links)])
        )

    def _rebuild_parts(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Every long memory's later parts embedded again (with the configured model), the rest forgotten."""
        parts = self.ctx.parts
        if parts is None:
            return Success(None)
        batches = [memories[i : i + EMBED_SLICE] for i in range(0, len(memories), EMBED_SLICE)]
        found_parts = in_turn(batches, lambda batch: self.ctx.embedder.embed_parts([m.content for m in batch]))
        return found_parts.bind(
            lambda found: parts.rebuild(
                store, {m.id: v for m, v in zip(memories, [v for group in found for v in group], strict=True) if v}
            )
        )


def rolled_back(batches: Sequence[PendingBatch]) -> tuple[str, ...]:
    """What status and reindex say of the interrupted batches they rolled back."""
    return tuple(
        f"A batch of {batch.size} memories was interrupted mid-write (its writer was stopped) and has been "
        "rolled back: none of it is stored. Run it again to store it."
        for batch in batches
    )


def _status(backend: str, store: str, census: Census, location: Mapping[str, str], problems: tuple[str, ...]) -> Status:
    return Status(backend, store, census.live, location, problems, census.deleted, census.expired)


def saved_order(memories: Sequence[Memory], links: Mapping[str, tuple[str | None, str | None]]) -> list[Memory]:
    """Creation order; memories created at the same moment (one batch's turns) keep their order in the old index.

    The old order is read off the index's previous/next links: each chain is walked from its first
    known memory, and a memory's position in that walk breaks ties of created_at (then the id).
    """
    present = {m.id for m in memories}
    position: dict[str, int] = {}
    for memory in memories:
        before = links.get(memory.id, (None, None))[0]
        if before in present:
            continue  # not the first of its chain
        current: str | None = memory.id
        while current is not None and current in present and current not in position:
            position[current] = len(position)
            current = links.get(current, (None, None))[1]
    return sorted(memories, key=lambda m: (m.created_at, position.get(m.id, len(position)), m.id))


def one_memory_per_path(memories: Sequence[Memory]) -> tuple[list[Memory], tuple[str, ...]]:
    """Live memories that share a path (hand-made files like `My Note.md` and `my_note.md`, or data written
    before paths were enforced) keep their content: the oldest keeps the path, each other one moves to
    `<slug>-<first 8 characters of its id>` beside it. Returns the memories and what was renamed.
    Paths are unique per namespace: memories of different namespaces at one path all keep it."""
    holders: dict[tuple[tuple[str, ...], MemoryPath], Memory] = {}
    for memory in sorted(memories, key=lambda m: (m.created_at, m.id)):
        if memory.path is not None and not memory.deleted:
            holders.setdefault((memory.namespace, memory.path), memory)
    kept: list[Memory] = []
    renamed: list[str] = []
    for memory in memories:
        path = memory.path
        if path is None or memory.deleted or holders[(memory.namespace, path)].id == memory.id:
            kept.append(memory)
            continue
        unique = MemoryPath((*path.segments[:-1], f"{path.slug[:100]}-{memory.id[:8]}"))
        kept.append(evolve(memory, path=unique))
        renamed.append(f"{path} → {unique}")
    return kept, tuple(renamed)
