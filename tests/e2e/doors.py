"""The four doors (Python API, CLI, REST, MCP) behind one small interface, for the door contract suite.

Each door is driven the way its users drive it: the Python API in process, the installed `memory` command as a
subprocess (through its local memory server), `memory serve` over HTTP and `memory mcp` through the official MCP
client over stdio. Answers are brought to one plain shape (a memory's id, path, content and tags; a page's paths
and total; an error's code), so a scenario can assert the same outcome at every door.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory import CreateMemory, MemoryService, SearchMemories, UpdateMemory
from agent_memory.domain.views import MemoryView
from tests.e2e.conftest import MemoryCli


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
class Refused:
    """A failure, reduced to its error code."""

    code: str


Outcome = Shown | Page | Refused | bool


class Door(Protocol):
    """One way in. Every method returns the plain outcome or Refused(code); none raises for a refusal."""

    name: str

    def add(self, path: str, content: str, tags: Sequence[str] = ()) -> Shown | Refused: ...
    def get(self, ref: str) -> Shown | Refused: ...
    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused: ...
    def move(self, ref: str, destination: str) -> Shown | Refused: ...
    def delete(self, ref: str) -> bool | Refused: ...
    def remove(self, ref: str) -> bool | Refused: ...
    def list(self, category: str, *, limit: int | None = None, offset: int = 0) -> Page | Refused: ...
    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused: ...


def shown(body: dict[str, Any]) -> Shown:
    return Shown(body["id"], body.get("path"), body["content"], tuple(body.get("tags", ())))


def _code_of_text(text: str) -> Refused:
    """An MCP tool error's code: the text opens with it ('MEMORY_NOT_FOUND: …')."""
    return Refused(text.split(":", 1)[0].strip())


# --- Python API ------------------------------------------------------------------------------------


class PythonDoor:
    """The MemoryService in process, as README's "Use it from Python" builds it."""

    name = "python"

    def __init__(self, service: MemoryService) -> None:
        self.service = service

    @staticmethod
    def _view(result: Result[MemoryView, Any]) -> Shown | Refused:
        match result:
            case Success(view):
                memory = view.memory
                return Shown(memory.id, None if memory.path is None else str(memory.path), memory.content, memory.tags)
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError(result)  # pragma: no cover - Result is closed

    def add(self, path: str, content: str, tags: Sequence[str] = ()) -> Shown | Refused:
        return self._view(self.service.add(CreateMemory(content=content, path=path, tags=tuple(tags))))

    def get(self, ref: str) -> Shown | Refused:
        return self._view(self.service.get(ref))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        return self._view(
            self.service.update(UpdateMemory(ref=ref, content=content, tags=None if tags is None else tuple(tags)))
        )

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._view(self.service.move(ref, destination))

    @staticmethod
    def _done(result: Result[Any, Any]) -> bool | Refused:
        match result:
            case Success(_):
                return True
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError(result)  # pragma: no cover - Result is closed

    def delete(self, ref: str) -> bool | Refused:
        return self._done(self.service.delete(ref))

    def remove(self, ref: str) -> bool | Refused:
        return self._done(self.service.remove(ref))

    def list(self, category: str, *, limit: int | None = None, offset: int = 0) -> Page | Refused:
        match self.service.list(category, limit=limit, offset=offset):
            case Success(listing):
                paths = tuple(None if v.memory.path is None else str(v.memory.path) for v in listing.memories)
                return Page(paths, listing.total)
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError("unreachable")  # pragma: no cover

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        match self.service.search(SearchMemories(query=query, limit=limit, offset=offset)):
            case Success(found):
                paths = tuple(None if hit.memory.path is None else str(hit.memory.path) for hit in found.results)
                return Page(paths, has_more=found.has_more)
            case Failure(error):
                return Refused(error.code.value)
        raise AssertionError("unreachable")  # pragma: no cover


# --- CLI -------------------------------------------------------------------------------------------


class CliDoor:
    """The installed `memory` command (JSON output, errors as JSON on stderr with exit 1)."""

    name = "cli"

    def __init__(self, cli: MemoryCli) -> None:
        self.cli = cli

    def _run(self, *args: str) -> Any:
        ran = self.cli(*args)
        assert "Traceback" not in ran.stderr, ran.stderr
        if ran.code == 0:
            return ran.json
        assert ran.code == 1 and ran.stdout == "", (ran.code, ran.stdout, ran.stderr)
        return Refused(ran.error["code"])

    def _memory(self, *args: str) -> Shown | Refused:
        body = self._run(*args)
        return body if isinstance(body, Refused) else shown(body)

    def add(self, path: str, content: str, tags: Sequence[str] = ()) -> Shown | Refused:
        return self._memory("add", path, "--content", content, *[f"--tag={tag}" for tag in tags])

    def get(self, ref: str) -> Shown | Refused:
        return self._memory("get", ref)

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        args = ["update", ref]
        if content is not None:
            args += ["--content", content]
        if tags is not None:
            args += [f"--tag={tag}" for tag in tags] if tags else ["--clear-tags"]
        return self._memory(*args)

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._memory("move", ref, destination)

    def delete(self, ref: str) -> bool | Refused:
        body = self._run("delete", ref)
        return body if isinstance(body, Refused) else bool(body["deleted"])

    def remove(self, ref: str) -> bool | Refused:
        body = self._run("remove", ref)
        return body if isinstance(body, Refused) else bool(body["removed"])

    def list(self, category: str, *, limit: int | None = None, offset: int = 0) -> Page | Refused:
        args = ["list", category, f"--offset={offset}"] + ([] if limit is None else [f"--limit={limit}"])
        body = self._run(*args)
        if isinstance(body, Refused):
            return body
        return Page(tuple(m.get("path") for m in body["memories"]), body["total"])

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        body = self._run("search", query, f"--limit={limit}", f"--offset={offset}")
        if isinstance(body, Refused):
            return body
        # spec 000 fixes the CLI's search JSON to {"results", "count"}: it pages, but cannot say has_more
        return Page(tuple(hit.get("path") for hit in body["results"]))


# --- REST ------------------------------------------------------------------------------------------


class RestDoor:
    """`memory serve` over HTTP (a 4xx with a JSON body {error, code} for every refusal)."""

    name = "rest"

    def __init__(self, client: httpx.Client) -> None:
        self.http = client

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        assert response.status_code < 500, response.text
        body = response.json()
        if response.is_success:
            return body
        assert 400 <= response.status_code < 500 and body["error"], response.text
        return Refused(body["code"])

    def _memory(self, response: httpx.Response) -> Shown | Refused:
        body = self._answer(response)
        return body if isinstance(body, Refused) else shown(body)

    def add(self, path: str, content: str, tags: Sequence[str] = ()) -> Shown | Refused:
        return self._memory(self.http.post("/memories", json={"path": path, "content": content, "tags": list(tags)}))

    def get(self, ref: str) -> Shown | Refused:
        return self._memory(self.http.get(f"/memories/{ref}"))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        body: dict[str, Any] = {}
        if content is not None:
            body["content"] = content
        if tags is not None:
            body["tags"] = list(tags)
        return self._memory(self.http.patch(f"/memories/{ref}", json=body))

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._memory(self.http.post(f"/memories/{ref}/move", json={"destination": destination}))

    def delete(self, ref: str) -> bool | Refused:
        body = self._answer(self.http.delete(f"/memories/{ref}"))
        return body if isinstance(body, Refused) else bool(body["deleted"])

    def remove(self, ref: str) -> bool | Refused:
        body = self._answer(self.http.delete(f"/memories/{ref}", params={"hard": "true"}))
        return body if isinstance(body, Refused) else bool(body["removed"])

    def list(self, category: str, *, limit: int | None = None, offset: int = 0) -> Page | Refused:
        params: dict[str, Any] = {"category": category, "offset": offset}
        if limit is not None:
            params["limit"] = limit
        body = self._answer(self.http.get("/memories", params=params))
        if isinstance(body, Refused):
            return body
        return Page(tuple(m.get("path") for m in body["memories"]), body["total"])

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        body = self._answer(self.http.post("/search", json={"query": query, "limit": limit, "offset": offset}))
        if isinstance(body, Refused):
            return body
        return Page(tuple(hit.get("path") for hit in body["results"]), has_more=body["has_more"])


# --- MCP -------------------------------------------------------------------------------------------


class McpCaller(Protocol):
    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any: ...


class McpDoor:
    """`memory mcp` through the official client (a tool error whose text opens with the code for a refusal)."""

    name = "mcp"

    def __init__(self, session: McpCaller) -> None:
        self.session = session

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.session.call(tool, arguments)
        text: str = result.content[0].text
        assert "Traceback" not in text, text
        if result.is_error:
            return _code_of_text(text)
        return json.loads(text)

    def _memory(self, tool: str, arguments: dict[str, Any]) -> Shown | Refused:
        body = self._call(tool, arguments)
        return body if isinstance(body, Refused) else shown(body)

    def add(self, path: str, content: str, tags: Sequence[str] = ()) -> Shown | Refused:
        return self._memory("add_memory", {"path": path, "content": content, "tags": list(tags)})

    def get(self, ref: str) -> Shown | Refused:
        return self._memory("get_memory", {"path_or_id": ref})

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        arguments: dict[str, Any] = {"path_or_id": ref}
        if content is not None:
            arguments["content"] = content
        if tags is not None:
            arguments["tags"] = list(tags)
        return self._memory("update_memory", arguments)

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._memory("move_memory", {"from": ref, "to": destination})

    def delete(self, ref: str) -> bool | Refused:
        body = self._call("delete_memory", {"path_or_id": ref})
        return body if isinstance(body, Refused) else bool(body["deleted"])

    def remove(self, ref: str) -> bool | Refused:
        body = self._call("remove_memory", {"path_or_id": ref})
        return body if isinstance(body, Refused) else bool(body["removed"])

    def list(self, category: str, *, limit: int | None = None, offset: int = 0) -> Page | Refused:
        arguments: dict[str, Any] = {"category": category, "offset": offset}
        if limit is not None:
            arguments["limit"] = limit
        body = self._call("list_memories", arguments)
        if isinstance(body, Refused):
            return body
        return Page(tuple(m.get("path") for m in body["memories"]), body["total"])

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        body = self._call("search_memories", {"query": query, "limit": limit, "offset": offset})
        if isinstance(body, Refused):
            return body
        return Page(tuple(hit.get("path") for hit in body["results"]), has_more=body["has_more"])
