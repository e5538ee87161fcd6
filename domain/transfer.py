"""The export and import handlers: every memory of a store with all its fields, and idempotent import by id."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial

from attrs import evolve, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.batch_units import whole
from agent_memory.domain.commands import ExportMemories, ImportMemories
from agent_memory.domain.context import Context, keyword_entry
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_store_name
from agent_memory.domain.path_rules import paths_free
from agent_memory.domain.paths import CategoryPath, parse_category_path
from agent_memory.domain.ports import CategoryRegistry, PendingBatch, VectorStore
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.tenancy import guarded_only
from agent_memory.domain.views import Export, ImportReport, Progress, StoreOutline

__all__ = ["Export", "ImportReport", "StoreOutline", "Transfer", "export_memories", "import_memories"]

IMPORT_BATCH = 256


class _Tally:
    """Counts an import's progress and reports it after each batch."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.progress = total, progress
        self.created = self.replaced = 0

    def add(self, counts: tuple[int, int]) -> None:
        self.created += counts[0]
        self.replaced += counts[1]
        self.progress(self.created + self.replaced, self.total)


def export_memories(ctx: Context, command: ExportMemories) -> Result[Export, DomainError]:
    """Every given store (all when None) with its registered categories and their descriptions, then every memory
    of those stores: soft-deleted and expired ones too."""
    steps, stores = Transfer(ctx), command.stores
    return steps.export_outlines(stores=stores).bind(
        lambda outlines: steps.export(stores=stores).map(lambda memories: Export(tuple(outlines), tuple(memories)))
    )


def import_memories(ctx: Context, command: ImportMemories) -> Result[ImportReport, DomainError]:
    """Create each outlined store and register its categories (idempotent), then write the memories exactly as
    given (ids, timestamps, flags); an id already present is replaced. Each store's part is one unit."""
    steps = Transfer(ctx)
    return steps.import_outlines(command.outlines).bind(
        lambda stores: steps.import_memories(command.memories, progress=command.progress).map(
            lambda report: evolve(report, stores=stores)
        )
    )


@frozen
class Transfer:
    """The steps of export and import (issue: moving between backends loses nothing)."""

    ctx: Context

    def export(self, *, stores: Sequence[str] | None = None) -> Result[list[Memory], DomainError]:
        """Every memory of the given stores (all stores when None): soft-deleted and expired ones too."""
        dumped = (
            guarded_only(self.ctx.tenant, "export")
            .bind(lambda _: self._names(stores))
            .bind(lambda names: in_turn(names, self._dump))
        )
        return dumped.map(lambda groups: [memory for group in groups for memory in group])

    def _names(self, stores: Sequence[str] | None) -> Result[list[str], DomainError]:
        return Success(list(stores)) if stores is not None else self.ctx.catalog.names()

    def _dump(self, name: str) -> Result[list[Memory], DomainError]:
        """One store's memories, soft-deleted ones included, in creation order."""
        return (
            self.ctx.open(name, create=False)
            .bind(lambda store: store.scan(MemoryFilter(include_deleted=True)))
            .map(lambda memories: sorted(memories, key=lambda m: (m.created_at, m.id)))
        )

    def export_outlines(self, *, stores: Sequence[str] | None = None) -> Result[list[StoreOutline], DomainError]:
        """Every given store (all when None) with its registered categories and their descriptions."""
        return (
            guarded_only(self.ctx.tenant, "export")
            .bind(lambda _: self._names(stores))
            .bind(lambda found: Fold.collect([self._outline(n) for n in found], Success(())))
            .map(list)
        )

    def _outline(self, name: str) -> Result[StoreOutline, DomainError]:
        return (
            self.ctx.open(name, create=False)
            .bind(lambda _: self.ctx.catalog.categories(name))
            .bind(lambda registry: registry.describe_all())
            .map(lambda described: StoreOutline(name, dict(sorted(described.items()))))
        )

    def import_outlines(self, outlines: Sequence[StoreOutline]) -> Result[int, DomainError]:
        """Create each store and register its categories with their descriptions; idempotent. The stores made."""
        return (
            guarded_only(self.ctx.tenant, "import")
            .bind(lambda _: Fold.collect([_parsed(outline) for outline in outlines], Success(())))
            .bind(lambda parsed: in_turn(parsed, self._register_outline))
            .map(len)
        )

    def _register_outline(self, outline: _Outline) -> Result[None, DomainError]:
        name, categories = outline
        return self.ctx.exclusive(name, partial(self._register, name, categories))

    def _register(self, name: str, categories: tuple[tuple[CategoryPath, str], ...]) -> Result[None, DomainError]:
        def put_all(registry: CategoryRegistry) -> Result[None, DomainError]:
            return Fold.collect([registry.put(path, text) for path, text in categories], Success(())).map(
                lambda _: None
            )

        return self.ctx.open(name, create=True).bind(lambda _: self.ctx.catalog.categories(name)).bind(put_all)

    def import_memories(self, memories: Sequence[Memory], *, progress: Progress) -> Result[ImportReport, DomainError]:
        """Write memories exactly as given (ids, timestamps, flags); an id already present is replaced."""
        by_store: dict[str, list[Memory]] = {}
        for memory in memories:
            by_store.setdefault(memory.store, []).append(memory)
        tally = _Tally(total=len(memories), progress=progress)

        def import_store(item: tuple[str, list[Memory]]) -> Result[None, DomainError]:
            name, group = item
            return self.ctx.exclusive(name, partial(self._import_store, name, group, tally))

        return (
            guarded_only(self.ctx.tenant, "import")
            .bind(lambda _: in_turn(by_store.items(), import_store))
            .map(lambda _: ImportReport(tally.created, tally.replaced))
        )

    def _import_store(self, name: str, group: list[Memory], tally: _Tally) -> Result[None, DomainError]:
        return (
            self.ctx.open(name, create=True)
            .bind(self.ctx.check_model)
            .bind(lambda store: paths_free(store, group))
            .bind(lambda store: self._import_group(store, group, tally))
        )

    def _import_group(self, store: VectorStore, group: list[Memory], tally: _Tally) -> Result[None, DomainError]:
        """The store's part of an import as one unit: what it creates and what it replaces (as it was) are
        journaled before the first write, so a failure or a kill part-way leaves the store as it was."""
        duplicates = sorted(memory_id for memory_id, seen in Counter(m.id for m in group).items() if seen > 1)
        if duplicates:
            return Failure(
                DomainError(ErrorCode.INVALID_INPUT, f"The import holds the same id twice: {duplicates[0]}.")
            )
        batches = [group[start : start + IMPORT_BATCH] for start in range(0, len(group), IMPORT_BATCH)]
        found = in_turn(batches, lambda batch: store.get([m.id for m in batch]))
        return found.bind(
            lambda parts: self._import_known(store, batches, {m.id: m for part in parts for m in part}, tally)
        )

    def _import_known(
        self, store: VectorStore, batches: list[list[Memory]], before: dict[str, Memory], tally: _Tally
    ) -> Result[None, DomainError]:
        # a known id is replaced over the revision stored, not the one it was exported at (Memory.revision)
        batches = [[evolve(m, revision=before[m.id].revision) if m.id in before else m for m in b] for b in batches]
        group = [m for batch in batches for m in batch]
        pending = PendingBatch(
            group[0].store,
            tuple(m.id for m in group if m.id not in before),
            tuple(before[m.id] for m in group if m.id in before and before[m.id] != m),
        )
        return whole(
            self.ctx,
            store,
            pending,
            lambda: in_turn(batches, lambda batch: self._write_batch(store, batch, before).map(tally.add)),
        ).map(lambda _: None)

    def _write_batch(
        self, store: VectorStore, batch: list[Memory], before: Mapping[str, Memory]
    ) -> Result[tuple[int, int], DomainError]:
        """Add the batch's new ids and replace its known ones, then bring the keyword index in step: (created,
        replaced). A re-import costs what changed, not what was given: a memory stored exactly as given is left
        alone, one whose text is unchanged keeps its vector (one batched metadata write), and only new or changed
        texts are embedded; the keyword index is rewritten only for entries whose text or thread changed."""
        fresh = [m for m in batch if m.id not in before]
        known = [m for m in batch if m.id in before and before[m.id] != m]
        same_text = [m for m in known if before[m.id].content == m.content]
        new_text = [m for m in known if before[m.id].content != m.content]
        rekeyed = [m for m in known if keyword_entry(before[m.id]) != keyword_entry(m)]
        rethreaded = [  # a replaced memory now of another thread or scope leaves its old neighbours first
            m.id for m in rekeyed if keyword_entry(before[m.id]).thread != keyword_entry(m).thread
        ]
        counts = (len(fresh), len(batch) - len(fresh))
        to_embed = [m.content for m in [*new_text, *fresh]]
        embedded = self.ctx.embedder.embed_documents(to_embed) if to_embed else Success([])
        return embedded.bind(
            lambda vectors: (
                (store.replace(new_text, list(vectors)[: len(new_text)]) if new_text else Success([]))
                .bind(lambda _: store.update_metadata(same_text) if same_text else Success([]))
                .bind(lambda _: store.add(fresh, list(vectors)[len(new_text) :]) if fresh else Success(None))
                .bind(lambda _: self.ctx.unindex_keywords(batch[0].store, rethreaded))
                .bind(lambda _: self.ctx.index_keywords(batch[0].store, [*rekeyed, *fresh]))
                .map(lambda _: counts)
            )
        )


_Outline = tuple[str, tuple[tuple[CategoryPath, str], ...]]


def _parsed(outline: StoreOutline) -> Result[_Outline, DomainError]:
    """A store outline with its name and category paths checked."""
    return Result.do(
        (name, categories)
        for name in validated(lambda: check_store_name(outline.name))
        for categories in Fold.collect(
            [_category(path, text) for path, text in outline.categories.items()], Success(())
        )
    )


def _category(path: str, text: str) -> Result[tuple[CategoryPath, str], DomainError]:
    return parse_category_path(path).map(lambda parsed: (parsed, text))
