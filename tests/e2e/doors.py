"""The doors (Python API, CLI, REST, MCP over stdio and HTTP) behind one small interface, for the door contract suite.

Each door is driven the way its users drive it: the Python API in process, the installed `memory` command as a
subprocess (through its local memory server), `memory serve` over HTTP and `memory mcp` through the official MCP
client over stdio and streamable HTTP (those two live in doors_remote). Answers are brought to one plain shape (a
memory's id, path, content and tags; a page's paths and total; a category; an error's code), so a scenario can
assert the same outcome at every door.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol

from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory import CreateMemory, MemoryService, SearchMemories, UpdateMemory
from agent_memory.domain.views import MemoryView
from tests.e2e.conftest import MemoryCli

# every operation a scenario drives, by the Door method that drives it
OPERATIONS = (
    "add",
    "get",
    "update",
    "move",
    "delete",
    "restore",
    "remove",
    "list",
    "search",
    "reinforce",
    "recent",
    "prune",
    "list_stores",
    "create_store",
    "create_category",
    "describe_category",
    "delete_category",
)


@frozen
class Shown:
    """A memory as every door shows it, reduced to what a scenario compares."""

    id: str
    path: str | None
    content: str
    tags: tuple[str, ...]


@frozen
class Page:
    """A page of a listing or a search: the paths in order, and the total when the door gives one."""

    paths: tuple[str | None, ...]
    total: int | None = None
    has_more: bool | None = None


@frozen
class Category:
    """A category as the category operations answer it."""

    path: str
    description: str
    memory_count: int


@frozen
class Deleted:
    """A category delete's answer: how many memories it deleted, and whether they can be restored."""

    memory_count: int
    restorable: bool


@frozen
class Refused:
    """A failure, reduced to its error code."""

    code: str


class Door(Protocol):
    """One way in. Every method returns the plain outcome or Refused(code); none raises for a refusal.
    `offers` maps each operation of OPERATIONS the door has to what the door calls it (a tool, a route, a command),
    so the suite can check the table against what the door itself advertises."""

    name: str
    offers: Mapping[str, Any]

    def add(
        self,
        path: str,
        content: str,
        tags: Sequence[str] = (),
        *,
        decay: str = "stable",
        expires_at: str | None = None,
    ) -> Shown | Refused: ...
    def get(self, ref: str, *, store: str | None = None) -> Shown | Refused: ...
    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused: ...
    def move(self, ref: str, destination: str) -> Shown | Refused: ...
    def delete(self, ref: str) -> bool | Refused: ...
    def restore(self, ref: str) -> Shown | Refused: ...
    def remove(self, ref: str) -> bool | Refused: ...
    def list(
        self,
        category: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        store: str | None = None,
        include_deleted: bool = False,
    ) -> Page | Refused: ...
    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused: ...
    def reinforce(self, ref: str) -> Shown | Refused: ...
    def recent(self, *, limit: int, category: str | None = None) -> Page | Refused: ...
    def prune(self, *, dry_run: bool) -> Page | Refused: ...
    def list_stores(self) -> tuple[str, ...] | Refused: ...
    def create_store(self, name: str) -> str | Refused: ...
    def create_category(self, path: str, description: str = "") -> Category | Refused: ...
    def describe_category(self, path: str, description: str) -> Category | Refused: ...
    def delete_category(self, path: str, *, purge: bool = False) -> Deleted | Refused: ...


def shown(body: dict[str, Any]) -> Shown:
    return Shown(body["id"], body.get("path"), body["content"], tuple(body.get("tags", ())))


def paths_of(memories: Sequence[dict[str, Any]]) -> tuple[str | None, ...]:
    return tuple(m.get("path") for m in memories)


def category_of(body: dict[str, Any]) -> Category:
    return Category(body["path"], body["description"], body["memory_count"])


def deleted_of(body: dict[str, Any]) -> Deleted:
    assert body["deleted"] is True, body
    return Deleted(body["memory_count"], body["restorable"])


def store_names(body: dict[str, Any]) -> tuple[str, ...]:
    return tuple(store["name"] for store in body["stores"])


# --- Python API ------------------------------------------------------------------------------------


def _path(view: MemoryView) -> str | None:
    return None if view.memory.path is None else str(view.memory.path)


class PythonDoor:
    """The MemoryService in process, as README's "Use it from Python" builds it."""

    name = "python"
    offers: ClassVar[dict[str, Any]] = {operation: operation for operation in OPERATIONS}

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    def advertised(self) -> set[str]:
        """The service's public methods."""
        return {name for name in dir(type(self.service)) if not name.startswith("_")}

    @staticmethod
    def _view(result: Result[MemoryView, Any]) -> Shown | Refused:
        match result:
            case Success(view):
                memory = view.memory
                return Shown(memory.id, _path(view), memory.content, memory.tags)
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError(result)  # pragma: no cover - Result is closed

    @staticmethod
    def _then(result: Result[Any, Any], shape: Any) -> Any:
        match result:
            case Success(value):
                return shape(value)
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError(result)  # pragma: no cover - Result is closed

    def add(
        self,
        path: str,
        content: str,
        tags: Sequence[str] = (),
        *,
        decay: str = "stable",
        expires_at: str | None = None,
    ) -> Shown | Refused:
        expiry = None if expires_at is None else datetime.fromisoformat(expires_at)
        command = CreateMemory(content=content, path=path, tags=tuple(tags), decay_policy=decay, expires_at=expiry)
        return self._view(self.service.add(command))

    def get(self, ref: str, *, store: str | None = None) -> Shown | Refused:
        return self._view(self.service.get(ref, store=store))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        return self._view(
            self.service.update(UpdateMemory(ref=ref, content=content, tags=None if tags is None else tuple(tags)))
        )

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._view(self.service.move(ref, destination))

    def delete(self, ref: str) -> bool | Refused:
        return self._then(self.service.delete(ref), lambda _: True)

    def restore(self, ref: str) -> Shown | Refused:
        return self._view(self.service.restore(ref))

    def remove(self, ref: str) -> bool | Refused:
        return self._then(self.service.remove(ref), lambda _: True)

    def list(
        self,
        category: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        store: str | None = None,
        include_deleted: bool = False,
    ) -> Page | Refused:
        listed = self.service.list(category, limit=limit, offset=offset, store=store, include_deleted=include_deleted)
        return self._then(listed, lambda got: Page(tuple(_path(v) for v in got.memories), got.total))

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        found = self.service.search(SearchMemories(query=query, limit=limit, offset=offset))
        return self._then(
            found,
            lambda got: Page(
                tuple(None if hit.memory.path is None else str(hit.memory.path) for hit in got.results),
                has_more=got.has_more,
            ),
        )

    def reinforce(self, ref: str) -> Shown | Refused:
        return self._view(self.service.reinforce(ref))

    def recent(self, *, limit: int, category: str | None = None) -> Page | Refused:
        recent = self.service.recent(limit=limit, category=category)
        return self._then(recent, lambda views: Page(tuple(_path(v) for v in views)))

    def prune(self, *, dry_run: bool) -> Page | Refused:
        pruned = self.service.prune(dry_run=dry_run)
        return self._then(
            pruned, lambda report: Page(tuple(None if m.path is None else str(m.path) for m in report.memories))
        )

    def list_stores(self) -> tuple[str, ...] | Refused:
        return self._then(self.service.list_stores(), lambda stores: tuple(s.name for s in stores))

    def create_store(self, name: str) -> str | Refused:
        return self._then(self.service.create_store(name), lambda summary: summary.name)

    @staticmethod
    def _category(summary: Any) -> Category:
        return Category(str(summary.path), summary.description, summary.memory_count)

    def create_category(self, path: str, description: str = "") -> Category | Refused:
        return self._then(self.service.create_category(path, description=description), self._category)

    def describe_category(self, path: str, description: str) -> Category | Refused:
        return self._then(self.service.describe_category(path, description), self._category)

    def delete_category(self, path: str, *, purge: bool = False) -> Deleted | Refused:
        deleted = self.service.delete_category(path, purge=purge)
        return self._then(deleted, lambda summary: Deleted(summary.memory_count, restorable=not purge))


# --- CLI -------------------------------------------------------------------------------------------


class CliDoor:
    """The installed `memory` command (JSON output, errors as JSON on stderr with exit 1)."""

    name = "cli"
    offers: ClassVar[dict[str, Any]] = {
        "add": "add",
        "get": "get",
        "update": "update",
        "move": "move",
        "delete": "delete",
        "restore": "restore",
        "remove": "remove",
        "list": "list",
        "search": "search",
        "reinforce": "reinforce",
        "recent": "recent",
        "prune": "prune",
        "list_stores": "store list",
        "create_store": "store create",
        "create_category": "category create",
        "describe_category": "category describe",
        "delete_category": "category delete",
    }

    def __init__(self, cli: MemoryCli) -> None:
        self.cli = cli

    def _run(self, *args: str) -> Any:
        ran = self.cli(*args)
        assert "Traceback" not in ran.stderr, ran.stderr
        if ran.code == 0:
            return ran.json
        assert ran.code == 1 and ran.stdout == "", (ran.code, ran.stdout, ran.stderr)
        return Refused(ran.error["code"])

    def _then(self, shape: Any, *args: str) -> Any:
        body = self._run(*args)
        return body if isinstance(body, Refused) else shape(body)

    def advertised(self) -> set[str]:
        """The commands `memory --help` and its groups' help list."""
        listed: set[str] = set()
        for group in ("", "store", "category"):
            ran = self.cli(*group.split(), "--help")
            assert ran.code == 0, ran.stderr
            commands = re.findall(r"^ {4}([a-z-]+)(?: |$)", ran.stdout, re.MULTILINE)  # argparse's command list
            listed |= {f"{group} {command}".strip() for command in commands}
        return listed

    def add(
        self,
        path: str,
        content: str,
        tags: Sequence[str] = (),
        *,
        decay: str = "stable",
        expires_at: str | None = None,
    ) -> Shown | Refused:
        args = ["add", path, "--content", content, f"--decay={decay}", *[f"--tag={tag}" for tag in tags]]
        if expires_at is not None:
            args.append(f"--expires-at={expires_at}")
        return self._then(shown, *args)

    def get(self, ref: str, *, store: str | None = None) -> Shown | Refused:
        return self._then(shown, "get", ref, *([] if store is None else [f"--store={store}"]))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        args = ["update", ref]
        if content is not None:
            args += ["--content", content]
        if tags is not None:
            args += [f"--tag={tag}" for tag in tags] if tags else ["--clear-tags"]
        return self._then(shown, *args)

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._then(shown, "move", ref, destination)

    def delete(self, ref: str) -> bool | Refused:
        return self._then(lambda body: bool(body["deleted"]), "delete", ref)

    def restore(self, ref: str) -> Shown | Refused:
        return self._then(shown, "restore", ref)

    def remove(self, ref: str) -> bool | Refused:
        return self._then(lambda body: bool(body["removed"]), "remove", ref)

    def list(
        self,
        category: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        store: str | None = None,
        include_deleted: bool = False,
    ) -> Page | Refused:
        args = ["list", category, f"--offset={offset}"] + ([] if limit is None else [f"--limit={limit}"])
        args += ([] if store is None else [f"--store={store}"]) + (["--include-deleted"] if include_deleted else [])
        return self._then(lambda body: Page(paths_of(body["memories"]), body["total"]), *args)

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        # spec 000 fixes the CLI's search JSON to {"results", "count"}: it pages, but cannot say has_more
        return self._then(
            lambda body: Page(paths_of(body["results"])), "search", query, f"--limit={limit}", f"--offset={offset}"
        )

    def reinforce(self, ref: str) -> Shown | Refused:
        return self._then(shown, "reinforce", ref)

    def recent(self, *, limit: int, category: str | None = None) -> Page | Refused:
        args = ["recent", f"--limit={limit}", *([] if category is None else [f"--category={category}"])]
        return self._then(lambda body: Page(paths_of(body["memories"])), *args)

    def prune(self, *, dry_run: bool) -> Page | Refused:
        args = ["prune", *(["--dry-run"] if dry_run else [])]
        return self._then(lambda body: Page(paths_of(body["pruned"])), *args)

    def list_stores(self) -> tuple[str, ...] | Refused:
        return self._then(store_names, "store", "list")

    def create_store(self, name: str) -> str | Refused:
        return self._then(lambda body: body["name"], "store", "create", name)

    def create_category(self, path: str, description: str = "") -> Category | Refused:
        return self._then(category_of, "category", "create", path, f"--description={description}")

    def describe_category(self, path: str, description: str) -> Category | Refused:
        return self._then(category_of, "category", "describe", path, "--", description)

    def delete_category(self, path: str, *, purge: bool = False) -> Deleted | Refused:
        return self._then(deleted_of, "category", "delete", path, *(["--purge"] if purge else []))
