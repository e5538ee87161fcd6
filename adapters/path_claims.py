"""Path claims in the Ledger: which memory holds a path of a store, decided by the engine's insert-if-absent write."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from returns.result import Result

from agent_memory.adapters.shared.boundary import Abort, as_result, value_of
from agent_memory.adapters.shared.ledger import Field, Ledger, LedgerRecord
from agent_memory.adapters.shared.prefixes import NAMESPACE_JOIN
from agent_memory.domain.errors import DomainError, ErrorCode

KIND = "path"
FREE = ""  # the holder of a claim that frees the path (a move away, a delete, a removal, a rollback)
PROBE = 8  # claim versions read per round trip when looking for a path's newest claim
MAX_COMMITS_KEPT = 4096  # newest claims' batches remembered for `commit_of`
FREED_RETRIES = 8  # claims lost to a claim freeing the path, each read again, before a write gives up (CONFLICT)

Place = tuple[str, tuple[str, ...], str]  # (store, namespace, path)


def claim_key(place: Place, version: int) -> str:
    store, namespace, path = place
    return f"{KIND}/{store}/{NAMESPACE_JOIN.join(namespace)}|{path}/{version:08d}"


class PathClaims:
    """Versioned claims of each (store, namespace, path): records `path/<store>/<namespace>|<path>/<n>`, n = 1, 2, …,
    each inserted only if absent (Ledger.claim), never changed or removed. The holder of a path's newest claim is
    the memory that may be live at it; a write that puts a memory at a path claims the version after the newest it
    read, so of any writers that read the same newest version, from any machines and after any pause, exactly one
    wins and the others are refused (DESTINATION_EXISTS naming the winner). Freeing a path is claiming its next
    version for nobody (FREE).

    `occupied(holder)` is the caller's judgement of the newest holder (another memory): how it holds the path while
    it is, or may yet be, live there (its write may still be on its way), None once it is deleted or expired.
    A claim may name the batch whose write puts its holder there (`commit`, its key in CommitOutcomes): a holder
    never written is then judged by that batch's outcome, which a contender may claim VOID (ClaimedStore). A claim
    for a stored memory moved or restored there names the revision its write claims next (`revision`,
    RevisionClaims): a holder not there yet is judged by that revision, which a contender may claim first, with the
    memory as it is, so that the move can never land (ClaimedStore).
    """

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._guard = threading.Lock()
        self._known: dict[Place, int] = {}  # per place: a version known to exist (where the next probe starts)
        # (place, holder) → the batch and the revision named by its newest claim read
        self._commits: dict[tuple[Place, str], tuple[str, int]] = {}

    def newest(self, place: Place) -> Result[tuple[int, str], DomainError]:
        """The newest claim of a place: (version, holder); (0, FREE) when it was never claimed."""
        return as_result(lambda: self._newest(place))

    def commit_of(self, place: Place, holder: str) -> str:
        """The batch named by the newest claim of `holder` at `place` this process read ("" : none, or unread)."""
        with self._guard:
            return self._commits.get((place, holder), ("", 0))[0]

    def revision_of(self, place: Place, holder: str) -> int:
        """The revision of `holder` named by its newest claim at `place` this process read (0: none, or unread)."""
        with self._guard:
            return self._commits.get((place, holder), ("", 0))[1]

    def claim(
        self,
        place: Place,
        holder: str,
        occupied: Callable[[str], Result[str | None, DomainError]],
        *,
        commit: str = "",
        revision: int = 0,
    ) -> Result[int, DomainError]:
        """Make `holder` the path's newest holder (the version it holds): at once when it is already, else by
        claiming the next version, refused (DESTINATION_EXISTS) when the newest holder is occupying the path or
        another writer claimed that version first for a memory (a version lost to a claim that frees the path is
        judged again: a rollback of the holder this writer voided may free it at the same moment). `commit`: the
        batch whose write puts `holder` there; `revision`: the revision of `holder` whose write puts it there (a
        move, a restore)."""

        def run() -> int:
            with self._guard:
                unseen = place not in self._known
            if unseen and self._claim(place, 1, holder, commit, revision)[0]:
                return 1  # a path never claimed (most creates): its first claim, without reading first
            for _ in range(FREED_RETRIES):
                version, current = self._newest(place)
                if current == holder:
                    return version
                how = value_of(occupied(current)) if current != FREE else None
                if how is not None:
                    raise Abort(taken_by(place, current, how))
                won, winner = self._claim(place, version + 1, holder, commit, revision)
                if won:
                    return version + 1
                if winner != FREE:
                    raise Abort(taken_by(place, winner, "was put there by another writer at the same moment"))
                # freed by another writer at the same moment (a move away, a rollback): judge the next version
            raise Abort(
                DomainError(
                    ErrorCode.CONFLICT,
                    f"Path '{place[2]}' was freed by other writers {FREED_RETRIES} times while this write tried to "
                    "take it. Nothing was written; try again.",
                    path=place[2],
                )
            )

        return as_result(run)

    def release(self, place: Place, holder: str) -> Result[None, DomainError]:
        """Free the path if `holder` is its newest holder (a claim lost to another writer meanwhile is fine)."""

        def run() -> None:
            version, current = self._newest(place)
            if current == holder:
                self._claim(place, version + 1, FREE)

        return as_result(run)

    # --- helpers (plain: they raise Abort, the port methods convert)

    def _claim(self, place: Place, version: int, holder: str, commit: str = "", revision: int = 0) -> tuple[bool, str]:
        """Claim one version: whether this call's record was stored, and the holder of the record that was."""
        token = uuid.uuid4().hex  # tells this claim from an earlier one of the same holder
        fields: dict[str, Field] = {"holder": holder, "token": token}
        fields |= ({"commit": commit} if commit else {}) | ({"revision": revision} if revision else {})
        record = LedgerRecord(key=claim_key(place, version), store=place[0], kind=KIND, seq=0, fields=fields)
        stored = value_of(self.ledger.claim(record))
        with self._guard:
            self._known[place] = max(self._known.get(place, 0), version)
        return stored.fields.get("token") == token, str(stored.fields.get("holder", FREE))

    def _newest(self, place: Place) -> tuple[int, str]:
        with self._guard:
            start = self._known.get(place, 0)
        newest, holder, commit, revision = start, FREE, "", 0
        if start:
            found = value_of(self.ledger.read([claim_key(place, start)]))
            if found:
                holder, commit, revision = _holder(found[claim_key(place, start)])
        while True:
            versions = range(newest + 1, newest + 1 + PROBE)
            found = value_of(self.ledger.read([claim_key(place, v) for v in versions]))
            present = [v for v in versions if claim_key(place, v) in found]
            if present:
                newest = max(present)
                holder, commit, revision = _holder(found[claim_key(place, newest)])
            if newest < versions[-1]:
                with self._guard:
                    self._known[place] = max(self._known.get(place, 0), newest)
                    if commit or revision:
                        if len(self._commits) >= MAX_COMMITS_KEPT:  # a bound: only a contender needs one, at once
                            self._commits.clear()
                        self._commits[(place, holder)] = (commit, revision)
                return newest, holder


def _holder(record: LedgerRecord) -> tuple[str, str, int]:
    """A claim's holder, the batch it names ("" : none) and the revision it names (0: none)."""
    revision = record.fields.get("revision", 0)
    return (
        str(record.fields.get("holder", FREE)),
        str(record.fields.get("commit", "")),
        int(revision) if isinstance(revision, int | float) and not isinstance(revision, bool) else 0,
    )


def taken_by(place: Place, holder: str, how: str) -> DomainError:
    _, _, path = place
    return DomainError(
        ErrorCode.DESTINATION_EXISTS,
        f"Path '{path}' is taken: memory {holder} {how}. Nothing was written; move or delete that memory first, "
        "or choose another path.",
        path=path,
    )
