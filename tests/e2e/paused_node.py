"""A node of the paused-writer fault suite: one host's service over a `chroma run`, answering one write per line of
stdin; told to, it stops itself (SIGSTOP) at its next write to the engine, in chromadb's client, where a VM pause or
a long GC would catch it: between its checks and its write. Told to (`open`), it opens another collection of the
engine under a HOME of its own, with a lease ttl and a wall clock off by a number of seconds (its service's and its
lease's Clock); told to `stream`, it writes as a racing host does (tests/e2e/race_node.py) until a stop file appears,
logging every answer."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from chromadb.api.models.Collection import Collection
from returns.result import Failure, Result, Success

from agent_memory.adapters.clock import SkewedClock
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_engine_locks, build_service
from agent_memory.entrypoints.settings import load_settings
from tests.e2e.race_node import Node, embedder, open_node

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


def skewed_node(home: Path, engine: dict[str, str], ttl: str, skew_s: float) -> MemoryService:
    """A service as open_node makes it, on a host whose wall clock is `skew_s` seconds off: its service's clock and
    its lease's (build_engine_locks' clock seam, taken before build_service asks for the process's locks)."""
    env = {"HOME": str(home), **engine, "MEMORY_LEASE_TTL_SECONDS": ttl}
    settings = load_settings({"data_dir": str(home / "data"), "backend": "chroma"}, env).unwrap()
    clock = SkewedClock(timedelta(seconds=skew_s))
    build_engine_locks(settings, clock=clock)
    return build_service(settings, embedder=embedder(), clock=clock).unwrap()


def opened(home: Path, asked: dict[str, Any]) -> MemoryService:
    """The service of one collection of the engine, under a HOME (and data directory) of its own."""
    place = home / asked["engine"]["MEMORY_COLLECTION"]
    if asked.get("skew", 0):
        return skewed_node(place, asked["engine"], asked["ttl"], float(asked["skew"]))
    return open_node(place, asked["engine"], asked["ttl"])


def streamed(service: MemoryService, asked: dict[str, Any]) -> dict[str, Any]:
    """Write as a racing host does until the stop file appears; every answer is logged (race_node.Node)."""
    node = Node(asked["name"], service, Path(asked["log"]), asked["seed"])
    stop = Path(asked["stop"])
    steps = 0
    while not stop.exists():
        node.step()
        steps += 1
    node.log.close()
    return {"streamed": steps}


def searched(service: MemoryService, asked: dict[str, Any]) -> dict[str, Any]:
    """Search (hybrid) until the stop file appears, a pause between searches (as a reader asks, not a benchmark
    loop taking a core of its own); how many searches, and how many failed."""
    stop, done, failed = Path(asked["stop"]), 0, 0
    while not stop.exists():
        found = service.search(SearchMemories(query=asked["query"], limit=10))
        failed += not isinstance(found, Success)
        done += 1
        time.sleep(0.05)
    return {"searched": done, "failed": failed}


def leases(service: MemoryService, asked: dict[str, Any]) -> dict[str, Any]:
    """This process's lease: its node id (named by each ticket it claims), how many tickets it won, and how many
    tickets ahead of its own it passed over after waiting out their ttl (each a lease wait)."""
    locks = service.locks
    return {
        "node": getattr(locks, "node", ""),
        "claims": getattr(locks, "claims", -1),
        "expiries": getattr(locks, "expiries", -1),
    }


def main() -> None:
    config = json.loads(sys.argv[1])
    home = Path(config["home"])
    service = open_node(home, config["engine"], os.environ.get("MEMORY_LEASE_TTL_SECONDS"))
    say({"ready": True})
    for line in sys.stdin:
        asked = json.loads(line)
        op = asked["op"]
        if op == "sync":  # what the test reads up to: answers of an earlier test left unread are skipped
            say({"sync": asked["nonce"]})
        elif op == "open":
            armed.clear()
            service = opened(home, asked)
            say({"opened": asked["engine"]["MEMORY_COLLECTION"]})
        elif op == "stream":
            say(streamed(service, asked))
        elif op == "search":
            say(searched(service, asked))
        elif op == "leases":
            say(leases(service, asked))
        elif op == "arm":
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
