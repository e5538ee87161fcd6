"""Export and import: every memory of a store with all its fields, and idempotent import by id."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from attrs import frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.base import UseCaseBase, attempt, keyword_entry
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_store_name
from agent_memory.domain.paths import CategoryPath, parse_category_path
from agent_memory.domain.ports import CategoryRegistry, VectorStore
from agent_memory.domain.tenancy import guarded_only

IMPORT_BATCH = 256
Progress = Callable[[int, int], None]


@frozen
class ImportReport:
    """How many memories an import created and how many it replaced (same id seen before)."""

    created: int
    replaced: int


def _quiet(_done: int, _total: int) -> None:
    return None


class _Tally:
    """Counts an import's progress and reports it after each batch."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.progress = total, progress
        self.created = self.replaced = 0

    def add(self, counts: tuple[int, int]) -> None:
        self.created += counts[0]
        self.replaced += counts[1]
        self.progress(self.created + self.replaced, self.total)


@frozen
class StoreOutline:
    """What export carries of a store beside its memories: its name and registered categories (path → description).

    It is how an empty store, an empty category and every category description survive a move between backends.
    """

    name: str
    categories: Mapping[str, str]


class TransferUseCases(UseCaseBase):
    """export and import (issue: moving between backends loses nothing)."""

    def export(self, *, stores: Sequence[str] | None = None) -> Result[list[Memory], DomainError]:
        """Every memory of the given stores (all stores when None): soft-deleted and expired ones too."""
        names: Result[list[str], DomainError] = Success(list(stores)) if stores is not None else self.catalog.names()

        def dump(store_names: list[str]) -> Result[list[Memory], DomainError]:
            everything: list[Memory] = []
            for name in store_names:
                scanned = self._open(name, create=False).bind(lambda s: s.scan(MemoryFilter(include_deleted=True)))
                if isinstance(scanned, Failure):
                    return scanned
                everything.extend(sorted(scanned.value_or([]), key=lambda m: (m.created_at, m.id)))
            return Success(everything)

        return guarded_only(self.tenant, "export").bind(lambda _: names).bind(dump)

    def export_outlines(self, *, stores: Sequence[str] | None = None) -> Result[list[StoreOutline], DomainError]:
        """Every given store (all when None) with its registered categories and their descriptions."""
        names: Result[list[str], DomainError] = Success(list(stores)) if stores is not None else self.catalog.names()

        def outline(name: str) -> Result[StoreOutline, DomainError]:
            return (
                self._open(name, create=False)
                .bind(lambda _: self.catalog.categories(name))
                .bind(lambda registry: registry.describe_all())
                .map(lambda described: StoreOutline(name, dict(sorted(described.items()))))
            )

        return (
            guarded_only(self.tenant, "export")
            .bind(lambda _: names)
            .bind(lambda found: Fold.collect([outline(n) for n in found], Success(())))
            .map(list)
        )

    def import_outlines(self, outlines: Sequence[StoreOutline]) -> Result[int, DomainError]:
        """Create each store and register its categories with their descriptions; idempotent. The stores made."""
        return (
            guarded_only(self.tenant, "import")
            .bind(lambda _: Fold.collect([_parsed(outline) for outline in outlines], Success(())))
            .bind(self._register_outlines)
        )

    def _register_outlines(self, outlines: tuple[_Outline, ...]) -> Result[int, DomainError]:
        for name, categories in outlines:
            done = self._exclusive(name, partial(self._register, name, categories))
            if isinstance(done, Failure):
                return done
        return Success(len(outlines))

    def _register(self, name: str, categories: tuple[tuple[CategoryPath, str], ...]) -> Result[None, DomainError]:
        def put_all(registry: CategoryRegistry) -> Result[None, DomainError]:
            return Fold.collect([registry.put(path, text) for path, text in categories], Success(())).map(
                lambda _: None
            )

        return self._open(name, create=True).bind(lambda _: self.catalog.categories(name)).bind(put_all)

    def import_memories(
        self, memories: Sequence[Memory], *, progress: Progress = _quiet
    ) -> Result[ImportReport, DomainError]:
        """Write memories exactly as given (ids, timestamps, flags); an id already present is replaced."""
        refused = guarded_only(self.tenant, "import")
        if isinstance(refused, Failure):
            return refused
        by_store: dict[str, list[Memory]] = {}
        for memory in memories:
            by_store.setdefault(memory.store, []).append(memory)
        tally = _Tally(total=len(memories), progress=progress)
        for name, group in by_store.items():
            outcome = self._exclusive(name, lambda name=name, group=group: self._import_store(name, group, tally))  # type: ignore[misc]
            if isinstance(outcome, Failure):
                return outcome
        return Success(ImportReport(tally.created, tally.replaced))

    def _import_store(self, name: str, group: list[Memory], tally: _Tally) -> Result[None, DomainError]:
        return (
            self._open(name, create=True)
            .bind(self._check_model)
            .bind(lambda store: self._paths_free(store, group))
            .bind(lambda store: self._import_group(store, group, tally))
        )

    def _import_group(self, store: VectorStore, group: list[Memory], tally: _Tally) -> Result[None, DomainError]:
        for start in range(0, len(group), IMPORT_BATCH):
            batch = group[start : start + IMPORT_BATCH]
            written = self._import_batch(store, batch).map(tally.add)
            if isinstance(written, Failure):
                return written
        return Success(None)

    def _import_batch(self, store: VectorStore, batch: list[Memory]) -> Result[tuple[int, int], DomainError]:
        def write(existing: list[Memory], vectors: list[Sequence[float]]) -> Result[tuple[int, int], DomainError]:
            before = {m.id: m for m in existing}
            known = set(before)
            rethreaded = [  # a replaced memory now of another thread or scope leaves its old neighbours first
                m.id for m in batch if m.id in before and keyword_entry(before[m.id]).thread != keyword_entry(m).thread
            ]
            fresh = [(m, v) for m, v in zip(batch, vectors, strict=True) if m.id not in known]
            for memory, vector in zip(batch, vectors, strict=True):
                if memory.id in known:
                    replaced = store.replace(memory, vector)
                    if isinstance(replaced, Failure):
                        return replaced
            if fresh:
                added = store.add([m for m, _ in fresh], [v for _, v in fresh])
                if isinstance(added, Failure):
                    return added
            counts = (len(fresh), len(batch) - len(fresh))
            return (
                self._unindex_keywords(batch[0].store, rethreaded)
                .bind(lambda _: self._index_keywords(batch[0].store, batch))
                .map(lambda _: counts)
            )

        duplicates = {m.id for m in batch if sum(1 for o in batch if o.id == m.id) > 1}
        if duplicates:
            return Failure(
                DomainError(ErrorCode.INVALID_INPUT, f"The import holds the same id twice: {sorted(duplicates)[0]}.")
            )
        return store.get([m.id for m in batch]).bind(
            lambda existing: self.embedder.embed_documents([m.content for m in batch]).bind(
                lambda vectors: write(existing, list(vectors))
            )
        )


_Outline = tuple[str, tuple[tuple[CategoryPath, str], ...]]


def _parsed(outline: StoreOutline) -> Result[_Outline, DomainError]:
    """A store outline with its name and category paths checked."""
    return Result.do(
        (name, categories)
        for name in attempt(lambda: check_store_name(outline.name))
        for categories in Fold.collect(
            [_category(path, text) for path, text in outline.categories.items()], Success(())
        )
    )


def _category(path: str, text: str) -> Result[tuple[CategoryPath, str], DomainError]:
    return parse_category_path(path).map(lambda parsed: (parsed, text))
