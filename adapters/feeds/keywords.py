"""The keyword index of a server engine without one of its own: a local SQLite FTS5 cache fed from the engine."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from returns.result import Failure, Result, Success

from agent_memory.adapters.feeds.feed import REBUILD, Change, ChangeFeed, chunked
from agent_memory.adapters.shared.ledger import Ledger
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.thread_keys import KeywordScope

T = TypeVar("T")


def _entries_text(entries: Sequence[KeywordEntry]) -> str:
    return json.dumps([[e.id, e.text, e.thread, e.alone] for e in entries], ensure_ascii=False)


def _entries(body: object) -> list[KeywordEntry]:
    if not isinstance(body, list):
        raise TypeError("a keyword change's body is a list")
    return [KeywordEntry(str(i), str(text), str(thread), bool(alone)) for i, text, thread, alone in body]


class FedKeywordIndex:
    """KeywordIndex whose truth is the engine's change feed "keywords": every write is claimed there first and
    then applied to this node's SQLite file; every read first applies what other nodes wrote since.

    A file that is missing (a new node, a wiped disk) or damaged is rebuilt from the feed by the node itself."""

    def __init__(self, local: SqliteKeywordIndex, ledger: Ledger) -> None:
        self.local = local
        self.feed = ChangeFeed(ledger, "keywords", local.path, self._apply)

    def _apply(self, store: str, change: Change) -> Result[None, DomainError]:
        try:
            if change.op == "remove":
                return self.local.remove(store, [str(i) for i in change.body])
            entries = _entries(change.body)
        except (TypeError, ValueError) as error:
            return Failure(
                DomainError(ErrorCode.STORAGE_ERROR, "A keyword change record is malformed.", cause=str(error))
            )
        return self.local.rebuild(store, entries) if change.op == REBUILD else self.local.upsert(store, entries)

    def _read(
        self, store: str, read: Callable[[], Result[T, DomainError]], *, again: bool = True
    ) -> Result[T, DomainError]:
        """Catch up, then read (ChangeFeed.read: a damaged file is set aside and replayed from the feed)."""
        return self.feed.read(store, read, lambda: self.local.rebuild(store, []), again=again)

    # --- the port ---------------------------------------------------------------------------

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        if not entries:
            return Success(None)
        return self.feed.append(store, "upsert", chunked(entries, _entries_text))

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        if not ids:
            return Success(None)
        return self.feed.append(store, "remove", chunked(ids, lambda run: json.dumps(list(run), ensure_ascii=False)))

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        return self.feed.append(store, REBUILD, chunked(entries, _entries_text), then="upsert")

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        return self._read(
            store, lambda: self.local.search(store, query, limit, thread_prefix=thread_prefix, scope=scope)
        )

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]:
        return self._read(store, lambda: self.local.neighbours(store, ids), again=False)  # after a search's own

    def count(self, store: str) -> Result[int, DomainError]:
        return self._read(store, lambda: self.local.count(store))
