"""A node of the paused-writer fault suite: one host's service over a `chroma run`, answering one write per line of
stdin; told to, it stops itself (SIGSTOP) at its next write to the engine, in chromadb's client, where a VM pause or
a long GC would catch it: between its checks and its write."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chromadb.api.models.Collection import Collection
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.filters import MemoryFilter
from tests.e2e.race_node import open_node

WRITES = ("add", "upsert", "update")
# "at": "record" (a store's records), "claim" (a path claim in the ledger), "revision" (a memory's revision claim) or
# "commit" (a batch's outcome record)
armed: dict[str, str] = {}


def _pausing(name: str, write: Callable[..., Any]) -> Callable[..., Any]:
    """chromadb's own write method, stopping this process first when armed and the write is the one asked for."""

    def call(self: Collection, *args: Any, **kwargs: Any) -> Any:
        at = armed.get("at")
        ids = [str(i) for i in kwargs.get("ids") or (args[0] if args else [])]
        record = at == "record" and "." not in self.name
        prefix = {"claim": "path/", "revision": "rev/", "commit": "commit/"}.get(at or "")
        claim = prefix is not None and self.name.endswith(".ledger") and any(i.startswith(prefix) for i in ids)
        if record or claim:
            armed.clear()
            say({"paused": name, "collection": self.name, "ids": ids})
            os.kill(os.getpid(), signal.SIGSTOP)  # the test sends SIGCONT once the other node has written
        return write(self, *args, **kwargs)

    return call


for method in WRITES:
    setattr(Collection, method, _pausing(method, getattr(Collection, method)))


def say(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def answered(result: Result[Any, Any]) -> dict[str, Any]:
    match result:
        case Success(value):
            views = value if isinstance(value, list) else [value]
            return {"ok": True, "ids": [view.memory.id for view in views]}
        case Failure(error):
            return {"ok": False, "code": error.code.value, "message": error.message}
    raise AssertionError(result)


def seen(service: Any, query: str, ids: list[str]) -> dict[str, Any]:
    """Which of `ids` each door of this node answers: hybrid and keyword search, get by id, the store's listing."""
    doors: dict[str, Any] = {}
    for mode in ("hybrid", "keyword"):
        hits = service.search(SearchMemories(query=query, mode=mode, limit=50)).unwrap().results
        doors[mode] = sorted(hit.memory.id for hit in hits if hit.memory.id in ids)
    doors["get"] = sorted(i for i in ids if isinstance(service.get(i), Success))
    doors["list"] = sorted(
        view.memory.id for view in service.list(limit=500).unwrap().memories if view.memory.id in ids
    )
    return doors


def main() -> None:
    config = json.loads(sys.argv[1])
    service = open_node(Path(config["home"]), config["engine"], os.environ.get("MEMORY_LEASE_TTL_SECONDS"))
    say({"ready": True})
    for line in sys.stdin:
        asked = json.loads(line)
        op = asked["op"]
        if op == "arm":
            armed["at"] = asked["at"]
            say({"armed": asked["at"]})
        elif op == "add":
            say(answered(service.add(CreateMemory(content=asked["content"], path=asked["path"]))))
        elif op == "batch":
            made = [CreateMemory(content=c, path=p) for c, p in zip(asked["contents"], asked["paths"], strict=True)]
            say(answered(service.create_many(made)))
        elif op == "move":
            say(answered(service.move(asked["ref"], asked["to"])))
        elif op == "delete":
            say(answered(service.delete(asked["ref"]).map(lambda memory: [])))
        elif op == "restore":
            say(answered(service.restore(asked["ref"])))
        elif op == "update":
            tags = tuple(asked["tags"]) if "tags" in asked else None
            changed = UpdateMemory(ref=asked["ref"], content=asked.get("content"), tags=tags)
            say(answered(service.update(changed)))
        elif op == "get":  # the memory as stored, deleted or not
            store = service.catalog.open("default", create=False).unwrap()
            (m,) = store.get([asked["ref"]]).unwrap()
            say({"ok": True, "content": m.content, "tags": list(m.tags), "deleted": m.deleted, "revision": m.revision})
        elif op == "read":  # what a reader of this node sees of these ids: by search (meaning, keyword), get, list
            say(seen(service, asked["query"], asked["ids"]))
        elif op == "raw":  # the ids the engine holds, committed or not (under the path claims' reads)
            store = service.catalog.inner.open("default", create=False).unwrap()
            say({"ids": sorted(m.id for m in store.scan(MemoryFilter(include_deleted=True)).unwrap())})
        elif op == "scan":
            store = service.catalog.open("default", create=False).unwrap()
            live = store.scan(MemoryFilter()).unwrap()
            say({"ok": True, "live": [{"id": m.id, "path": str(m.path), "content": m.content} for m in live]})


if __name__ == "__main__":
    main()
