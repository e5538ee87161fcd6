"""The door contract's network doors: `memory serve` over HTTP (REST) and `memory mcp` through the official MCP
client, over stdio or streamable HTTP; each answer brought to the plain shapes of tests.e2e.doors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import httpx

from tests.e2e.doors import (
    Category,
    Deleted,
    Page,
    Refused,
    Shown,
    category_of,
    deleted_of,
    paths_of,
    shown,
    store_names,
)

# --- REST ------------------------------------------------------------------------------------------


class RestDoor:
    """`memory serve` over HTTP (a 4xx with a JSON body {error, code} for every refusal)."""

    name = "rest"
    # operation -> (method, route) as the OpenAPI document lists it
    offers: ClassVar[dict[str, Any]] = {
        "add": ("post", "/memories"),
        "get": ("get", "/memories/{ref}"),
        "update": ("patch", "/memories/{ref}"),
        "move": ("post", "/move"),
        "delete": ("delete", "/memories/{ref}"),
        "restore": ("post", "/restore"),
        "remove": ("delete", "/memories/{ref}"),  # ?hard=true
        "list": ("get", "/memories"),
        "search": ("post", "/search"),
        "reinforce": ("post", "/reinforce"),
        "recent": ("get", "/recent"),
        "prune": ("post", "/prune"),
        "list_stores": ("get", "/stores"),
        "create_store": ("post", "/stores"),
        "create_category": ("post", "/categories"),
        "describe_category": ("put", "/categories/{path}"),  # …/description
        "delete_category": ("delete", "/categories/{path}"),
    }

    def __init__(self, client: httpx.Client) -> None:
        self.http = client

    def advertised(self) -> set[tuple[str, str]]:
        """Every (method, route) of the server's OpenAPI document."""
        paths = self.http.get("/openapi.json").raise_for_status().json()["paths"]
        return {(method, route) for route, operations in paths.items() for method in operations}

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        assert response.status_code < 500, response.text
        body = response.json()
        if response.is_success:
            return body
        assert 400 <= response.status_code < 500 and body["error"], response.text
        return Refused(body["code"])

    def _then(self, shape: Any, response: httpx.Response) -> Any:
        body = self._answer(response)
        return body if isinstance(body, Refused) else shape(body)

    def add(
        self,
        path: str,
        content: str,
        tags: Sequence[str] = (),
        *,
        decay: str = "stable",
        expires_at: str | None = None,
    ) -> Shown | Refused:
        body = {"path": path, "content": content, "tags": list(tags), "decay_policy": decay}
        if expires_at is not None:
            body["expires_at"] = expires_at
        return self._then(shown, self.http.post("/memories", json=body))

    def get(self, ref: str, *, store: str | None = None) -> Shown | Refused:
        params = {} if store is None else {"store": store}
        return self._then(shown, self.http.get(f"/memories/{ref}", params=params))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        body: dict[str, Any] = {}
        if content is not None:
            body["content"] = content
        if tags is not None:
            body["tags"] = list(tags)
        return self._then(shown, self.http.patch(f"/memories/{ref}", json=body))

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._then(shown, self.http.post("/move", json={"ref": ref, "destination": destination}))

    def delete(self, ref: str) -> bool | Refused:
        return self._then(lambda body: bool(body["deleted"]), self.http.delete(f"/memories/{ref}"))

    def restore(self, ref: str) -> Shown | Refused:
        return self._then(shown, self.http.post("/restore", json={"ref": ref}))

    def remove(self, ref: str) -> bool | Refused:
        answer = self.http.delete(f"/memories/{ref}", params={"hard": "true"})
        return self._then(lambda body: bool(body["removed"]), answer)

    def list(
        self,
        category: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        store: str | None = None,
        include_deleted: bool = False,
    ) -> Page | Refused:
        params: dict[str, Any] = {"category": category, "offset": offset}
        if include_deleted:
            params["include_deleted"] = "true"
        if limit is not None:
            params["limit"] = limit
        if store is not None:
            params["store"] = store
        answer = self.http.get("/memories", params=params)
        return self._then(lambda body: Page(paths_of(body["memories"]), body["total"]), answer)

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        answer = self.http.post("/search", json={"query": query, "limit": limit, "offset": offset})
        return self._then(lambda body: Page(paths_of(body["results"]), has_more=body["has_more"]), answer)

    def reinforce(self, ref: str) -> Shown | Refused:
        return self._then(shown, self.http.post("/reinforce", json={"ref": ref}))

    def recent(self, *, limit: int, category: str | None = None) -> Page | Refused:
        params: dict[str, Any] = {"limit": limit} | ({} if category is None else {"category": category})
        return self._then(lambda body: Page(paths_of(body["memories"])), self.http.get("/recent", params=params))

    def prune(self, *, dry_run: bool) -> Page | Refused:
        answer = self.http.post("/prune", json={"dry_run": dry_run})
        return self._then(lambda body: Page(paths_of(body["pruned"])), answer)

    def list_stores(self) -> tuple[str, ...] | Refused:
        return self._then(store_names, self.http.get("/stores"))

    def create_store(self, name: str) -> str | Refused:
        return self._then(lambda body: body["name"], self.http.post("/stores", json={"name": name}))

    def create_category(self, path: str, description: str = "") -> Category | Refused:
        answer = self.http.post("/categories", json={"path": path, "description": description})
        return self._then(category_of, answer)

    def describe_category(self, path: str, description: str) -> Category | Refused:
        answer = self.http.put(f"/categories/{path}/description", json={"description": description})
        return self._then(category_of, answer)

    def delete_category(self, path: str, *, purge: bool = False) -> Deleted | Refused:
        params = {"purge": "true"} if purge else {}
        return self._then(deleted_of, self.http.delete(f"/categories/{path}", params=params))


# --- MCP -------------------------------------------------------------------------------------------


class McpCaller(Protocol):
    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any: ...
    def tool_names(self) -> set[str]: ...


class McpDoor:
    """`memory mcp` through the official client, over stdio ("mcp") or streamable HTTP ("mcp-http"); a refusal is
    a tool error whose text opens with the code."""

    offers: ClassVar[dict[str, Any]] = {
        "add": "add_memory",
        "get": "get_memory",
        "update": "update_memory",
        "move": "move_memory",
        "delete": "delete_memory",
        "restore": "restore_memory",
        "remove": "remove_memory",
        "list": "list_memories",
        "search": "search_memories",
        "reinforce": "reinforce_memory",
        "recent": "get_recent_memories",
        "prune": "prune_memories",
        "list_stores": "list_stores",
        "create_store": "create_store",
        "create_category": "create_category",
        "describe_category": "set_category_description",
        "delete_category": "delete_category",
    }

    def __init__(self, session: McpCaller, name: str = "mcp") -> None:
        self.session = session
        self.name = name

    def advertised(self) -> set[str]:
        """The tools the server lists."""
        return self.session.tool_names()

    def _then(self, shape: Any, operation: str, arguments: dict[str, Any]) -> Any:
        result = self.session.call(self.offers[operation], arguments)
        text: str = result.content[0].text
        assert "Traceback" not in text, text
        if result.is_error:
            return Refused(text.split(":", 1)[0].strip())  # the text opens with the code: 'MEMORY_NOT_FOUND: …'
        return shape(json.loads(text))

    def add(
        self,
        path: str,
        content: str,
        tags: Sequence[str] = (),
        *,
        decay: str = "stable",
        expires_at: str | None = None,
    ) -> Shown | Refused:
        arguments = {"path": path, "content": content, "tags": list(tags), "decay_policy": decay}
        if expires_at is not None:
            arguments["expires_at"] = expires_at
        return self._then(shown, "add", arguments)

    def get(self, ref: str, *, store: str | None = None) -> Shown | Refused:
        return self._then(shown, "get", {"path_or_id": ref} | ({} if store is None else {"store": store}))

    def update(self, ref: str, *, content: str | None = None, tags: Sequence[str] | None = None) -> Shown | Refused:
        arguments: dict[str, Any] = {"path_or_id": ref}
        if content is not None:
            arguments["content"] = content
        if tags is not None:
            arguments["tags"] = list(tags)
        return self._then(shown, "update", arguments)

    def move(self, ref: str, destination: str) -> Shown | Refused:
        return self._then(shown, "move", {"from": ref, "to": destination})

    def delete(self, ref: str) -> bool | Refused:
        return self._then(lambda body: bool(body["deleted"]), "delete", {"path_or_id": ref})

    def restore(self, ref: str) -> Shown | Refused:
        return self._then(shown, "restore", {"path_or_id": ref})

    def remove(self, ref: str) -> bool | Refused:
        return self._then(lambda body: bool(body["removed"]), "remove", {"path_or_id": ref})

    def list(
        self,
        category: str,
        *,
        limit: int | None = None,
        offset: int = 0,
        store: str | None = None,
        include_deleted: bool = False,
    ) -> Page | Refused:
        arguments: dict[str, Any] = {"category": category, "offset": offset}
        if include_deleted:
            arguments["include_deleted"] = True
        if limit is not None:
            arguments["limit"] = limit
        if store is not None:
            arguments["store"] = store
        return self._then(lambda body: Page(paths_of(body["memories"]), body["total"]), "list", arguments)

    def search(self, query: str, *, limit: int, offset: int = 0) -> Page | Refused:
        arguments = {"query": query, "limit": limit, "offset": offset}
        return self._then(lambda body: Page(paths_of(body["results"]), has_more=body["has_more"]), "search", arguments)

    def reinforce(self, ref: str) -> Shown | Refused:
        return self._then(shown, "reinforce", {"id": ref})

    def recent(self, *, limit: int, category: str | None = None) -> Page | Refused:
        arguments: dict[str, Any] = {"limit": limit} | ({} if category is None else {"category": category})
        return self._then(lambda body: Page(paths_of(body["memories"])), "recent", arguments)

    def prune(self, *, dry_run: bool) -> Page | Refused:
        return self._then(lambda body: Page(paths_of(body["pruned"])), "prune", {"dry_run": dry_run})

    def list_stores(self) -> tuple[str, ...] | Refused:
        return self._then(store_names, "list_stores", {})

    def create_store(self, name: str) -> str | Refused:
        return self._then(lambda body: body["name"], "create_store", {"name": name})

    def create_category(self, path: str, description: str = "") -> Category | Refused:
        return self._then(category_of, "create_category", {"path": path, "description": description})

    def describe_category(self, path: str, description: str) -> Category | Refused:
        return self._then(category_of, "describe_category", {"path": path, "description": description})

    def delete_category(self, path: str, *, purge: bool = False) -> Deleted | Refused:
        return self._then(deleted_of, "delete_category", {"path": path} | ({"purge": True} if purge else {}))
