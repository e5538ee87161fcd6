"""The files backend's StoreCatalog (a directory per store under one root) and each store's CategoryRegistry.

A category's description is ``<category dir>/_category.md`` with a ``description:`` key; an empty category
directory is a category without a description. The index of every store comes from an injected StoreCatalog
(the composition root chooses which backend's), opened under the store's own name.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import filelock
from attrs import define, evolve, field, frozen
from returns.result import Failure, Result, Success

from agent_memory.adapters.files.boundary import LOCK_TIMEOUT_S, guarded
from agent_memory.adapters.files.directory import Batch, StoreFiles
from agent_memory.adapters.files.file_records import Record
from agent_memory.adapters.files.format import dump_block, read_block, to_domain_error
from agent_memory.adapters.files.layout import (
    CATEGORY_FILE,
    LOCK_FILE,
    UNFILED,
    Parts,
    bad_file,
    checked_segments,
    normalised,
    relative_path,
)
from agent_memory.adapters.files.store import FilesVectorStore
from agent_memory.adapters.shared.disk import creatable
from agent_memory.adapters.shared.names import is_store_name, store_not_found
from agent_memory.adapters.shared.private import PRIVATE_FILE, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.ports import StoreCatalog


@define
class FilesCategories:
    """A CategoryRegistry of `_category.md` files (`description: …`); empty category folders count too."""

    files: StoreFiles

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        def describe() -> dict[str, str]:
            described: dict[str, str] = {}
            for folder in self.files.walk():
                if not folder.parts or folder.parts[0] == UNFILED:
                    continue
                if CATEGORY_FILE in folder.files or folder.empty:
                    key = "/".join(normalised(folder.parts, relative_path(folder.parts), self.files.name))
                    text = described.get(key) or self._description(folder.parts)
                    described[key] = text
            return described

        return self.files.guard("read the category descriptions", describe)

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        def put(batch: Batch) -> None:
            parts = (*checked_segments(category.segments), CATEGORY_FILE)
            data, body = self._read(parts)
            others = {key: value for key, value in data.items() if key != "description"}
            batch.write(parts, dump_block({"description": description, **others}, body))
            batch.finish()

        return self.files.locked("describe a category", put)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        def remove(batch: Batch) -> None:
            for category in categories:
                folder = checked_segments(category.segments)
                batch.delete((*folder, CATEGORY_FILE))
                batch.forget_folder(folder)
            batch.finish()

        return self.files.locked("remove categories", remove)

    def _description(self, folder: Parts) -> str:
        data, _ = self._read((*folder, CATEGORY_FILE))
        description = data.get("description")
        if description is None:
            return ""
        if not isinstance(description, str):
            raise bad_file(
                relative_path((*folder, CATEGORY_FILE)),
                self.files.name,
                f"`description` is a {type(description).__name__}: write it as text, like `description: Notes on X`.",
            )
        return description

    def _read(self, parts: Parts) -> tuple[dict[str, object], str]:
        """A category file's keys and the text after its block ({} and '' when there is no file)."""
        text = self.files.read_text(parts)
        if text is None:
            return {}, ""
        match read_block(text):
            case Success((data, body)):
                return dict(data), body
            case Failure(problem):
                error = to_domain_error(problem, relative_path(parts))
                raise bad_file(relative_path(parts), self.files.name, error.message, error.cause)
        raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover


@frozen(kw_only=True)
class FilesCatalog:
    """The stores under `root`, one directory each; `index` supplies each store's search index (same name)."""

    root: Path = field(converter=Path)
    index: StoreCatalog
    _parsed: dict[str, dict[Parts, Record]] = field(factory=dict, init=False, repr=False, eq=False)

    @property
    def backend(self) -> str:
        return "files"

    def open(self, name: str, *, create: bool) -> Result[FilesVectorStore, DomainError]:
        return self._store_files(name, create=create).bind(
            lambda files: self.index.open(name, create=True).map(lambda index: FilesVectorStore(files, index))
        )

    def categories(self, name: str) -> Result[FilesCategories, DomainError]:
        return self._store_files(name, create=False).map(FilesCategories)

    def names(self) -> Result[list[str], DomainError]:
        def names() -> list[str]:
            if not self.root.is_dir():
                return []
            return sorted(entry.name for entry in self.root.iterdir() if entry.is_dir() and is_store_name(entry.name))

        return guarded("list the stores", self.root, names)

    def health(self) -> Result[Mapping[str, str], DomainError]:
        def merged(index_fields: Mapping[str, str]) -> Mapping[str, str]:
            fields = {"files_root": str(self.root), "index_backend": self.index.backend}
            return fields | {f"index_{key}": value for key, value in index_fields.items()}

        # a root not made yet reads as an empty one: nothing is created by asking (a write makes it)
        usable = Success(None) if creatable(self.root) else self._usable_root()
        return usable.bind(lambda _: self.index.health().map(merged))

    def keep_warm(self) -> None:
        self.index.keep_warm()  # the markdown files need nothing; their search index may

    def _usable_root(self) -> Result[None, DomainError]:
        """A root that exists is usable for reading even on a disk that refuses writes (writes then say so)."""
        return Success(None) if self.root.is_dir() else self._writable_root()

    def _writable_root(self) -> Result[None, DomainError]:
        def check() -> None:
            private_directory(self.root)
            if not os.access(self.root, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "not writable", str(self.root))

        return guarded("prepare the files root", self.root, check).alt(
            lambda error: DomainError(
                ErrorCode.BACKEND_UNAVAILABLE,
                f"The files root {self.root} cannot be created or written ({error.cause}). Point the data directory "
                "at a writable place, or fix its permissions.",
                path=str(self.root),
                cause=error.cause,
            )
        )

    def _store_files(self, name: str, *, create: bool) -> Result[StoreFiles, DomainError]:
        try:
            checked = check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        directory = self.root / checked
        if directory.is_dir():
            return Success(self._files(checked, directory))
        self._parsed.pop(checked, None)
        if not create:
            return Failure(evolve(store_not_found(checked), path=checked))
        return (
            self._writable_root()
            .bind(lambda _: guarded(f"create store '{checked}'", self.root, lambda: private_directory(directory)))
            .map(lambda _: self._files(checked, directory))
        )

    def _files(self, name: str, directory: Path) -> StoreFiles:
        lock = filelock.FileLock(
            str(directory / LOCK_FILE), timeout=LOCK_TIMEOUT_S, is_singleton=True, mode=PRIVATE_FILE
        )
        return StoreFiles(name, directory, lock, self._parsed.setdefault(name, {}))
