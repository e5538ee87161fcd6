"""The IdempotencyKeys port: in the engine's Ledger for a server that many machines share, in files under the data
folder for the embedded engines and the files backend (one machine)."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from returns.result import Failure, Result, Success

from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.adapters.shared.private import owner_only_files, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode

KIND = "idempotency"


class LedgerIdempotencyKeys:
    """One Ledger record per key (kind "idempotency"), claimed insert-if-absent: of racing retries on any machines
    exactly one stores its fingerprint, and every one reads the winner's."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def remember(self, store: str, key: str, fingerprint: str) -> Result[str, DomainError]:
        record = LedgerRecord(key=f"{KIND}/{store}/{key}", store=store, kind=KIND, fields={"fingerprint": fingerprint})
        return self.ledger.claim(record).map(lambda stored: str(stored.fields.get("fingerprint", "")))


class FileIdempotencyKeys:
    """One file per key under `folder` (owner-only), made by a hard link of a finished temporary file, which fails
    when the name exists: of racing processes exactly one stores, and nobody reads a half-written file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def remember(self, store: str, key: str, fingerprint: str) -> Result[str, DomainError]:
        name = hashlib.sha256(f"{store}\0{key}".encode()).hexdigest()
        target = self.folder / store / name
        try:
            private_directory(target.parent)
            spare = target.parent / f".{name}.{uuid.uuid4().hex}.tmp"
            with owner_only_files():
                spare.write_text(fingerprint, encoding="utf-8")
            try:
                os.link(spare, target)
            except FileExistsError:
                pass
            finally:
                spare.unlink(missing_ok=True)
            return Success(target.read_text(encoding="utf-8"))
        except OSError as error:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"Could not keep the idempotency key under {self.folder}{disk_hint(error, str(self.folder))}. "
                    "Nothing was stored.",
                    cause=str(error),
                )
            )
