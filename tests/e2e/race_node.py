"""A node of the scale-out race (one host's memory server stand-in): races writes, logs each answer, then probes search."""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from returns.result import Failure, Success

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.paging import MAX_PAGE
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

SHARED_PATHS = 8  # race/p0 … race/p7: every node adds, updates, moves and deletes there
BATCH_SIZE = 3
WINDOW = 40  # the embedder's window in words: a long memory is past it and has parts
ANIMALS = ("otter", "heron", "badger", "lynx", "walrus", "ibis", "marten", "okapi", "tapir", "gecko")
PLACES = ("harbour", "orchard", "library", "quarry", "meadow", "foundry", "canyon", "glacier")
FILLER_LETTERS = "bcdfghjklmnprstvwz"  # a long memory's filler: made-up words of its own, shared with no probe


def embedder() -> HashingEmbedder:
    """The embedder every node and the auditor share: the same vectors on every host, few hash collisions."""
    return HashingEmbedder(dimension=4096, window=WINDOW)


def open_node(home: Path, engine: dict[str, str], lease_ttl: str | None = None) -> MemoryService:
    """A service as one host has it: its own HOME and data directory, the shared engine's address (and the lease's
    ttl, MEMORY_LEASE_TTL_SECONDS, when the test sets one)."""
    env = {"HOME": str(home), **engine, **({"MEMORY_LEASE_TTL_SECONDS": lease_ttl} if lease_ttl else {})}
    settings = load_settings({"data_dir": str(home / "data"), "backend": "chroma"}, env).unwrap()
    return build_service(settings, embedder=embedder()).unwrap()


def token(node: str, kind: str, seq: int) -> str:
    """A word no other memory holds: what keyword search looks for."""
    return f"qx{kind}{node}{seq}"


def short_text(mark: str, node: str, rng: random.Random, revision: int = 0) -> str:
    return f"{mark} revision {revision} by {node} about the {rng.choice(ANIMALS)} in the {rng.choice(PLACES)}"


def opening(mark: str) -> str:
    """A long memory's first words: words of its own (its mark itself is kept for the end)."""
    first = mark.replace("qx", "qy", 1)
    return f"{first}one {first}two {first}three {first}four."


def last_sentence(mark: str) -> str:
    return f"Finally {mark} {mark}one {mark}two {mark}three."


def long_text(mark: str, rng: random.Random) -> str:
    """Its opening, three windows of filler, then a last sentence only this memory has (its mark only there)."""
    filler = " ".join("".join(rng.choices(FILLER_LETTERS, k=7)) for _ in range(WINDOW * 3))
    return f"{opening(mark)} {filler}. {last_sentence(mark)}"


class Node:
    """One racing host: every write it tries is logged with its answer and the wall-clock interval it took (the
    entries tests/e2e/audit.py reads)."""

    def __init__(self, name: str, service: MemoryService, log: Path, seed: int) -> None:
        self.name = name
        self.service = service
        self.log = log.open("a", encoding="utf-8")
        self.rng = random.Random(seed)
        self.seq = 0

    def record(self, entry: dict[str, Any]) -> None:
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    def attempt(self, op: str, call: Callable[[], Any], **what: Any) -> Any:
        """Run one write; log what it was, its answer (ok or the error code) and when it started and ended."""
        started = time.time()
        answer = call()
        ended = time.time()
        entry = {"node": self.name, "op": op, "t0": started, "t1": ended, **what}
        match answer:
            case Success(value):
                self.record({**entry, "ok": True, **self.described(value)})
                return value
            case Failure(error):
                self.record({**entry, "ok": False, "code": str(error.code)})
                return None

    @staticmethod
    def described(value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        memory = getattr(value, "memory", value)
        if isinstance(value, list):
            return {"ids": [view.memory.id for view in value]}
        if hasattr(memory, "id"):
            return {"id": memory.id, "path": None if memory.path is None else str(memory.path)}
        return {}

    def next_mark(self, kind: str) -> str:
        self.seq += 1
        return token(self.name, kind, self.seq)

    def shared(self) -> str:
        return f"race/p{self.rng.randrange(SHARED_PATHS)}"

    def step(self) -> None:
        roll = self.rng.random()  # mostly contended writes: each new memory costs every node a probe afterwards
        if roll < 0.25:
            self.add_at(self.shared())
        elif roll < 0.30:
            mark = self.next_mark("c")
            text = short_text(mark, self.name, self.rng)
            self.attempt("create", lambda: self.service.create(CreateMemory(content=text)), mark=mark, content=text)
        elif roll < 0.36:
            mark = self.next_mark("l")
            text = long_text(mark, self.rng)
            made = CreateMemory(content=text, path=f"long/{mark}")
            self.attempt("create", lambda: self.service.create(made), mark=mark, content=text, long=True)
        elif roll < 0.44:
            self.batch()
        elif roll < 0.68:
            self.update()
        elif roll < 0.80:
            path = self.shared()
            self.attempt("delete", lambda: self.service.delete(path), ref=path)
        else:  # to another shared path (mostly taken) or to a path of its own (free unless another node took it)
            source = self.shared()
            destination = self.shared() if self.rng.random() < 0.5 else f"moved/{self.next_mark('m')}"
            self.attempt("move", lambda: self.service.move(source, destination), ref=source, to=destination)

    def add_at(self, path: str) -> None:
        mark = self.next_mark("a")
        text = short_text(mark, self.name, self.rng)
        self.attempt("add", lambda: self.service.add(CreateMemory(content=text, path=path)), mark=mark, content=text)

    def batch(self) -> None:
        """A batch of new memories; half of them also claim a shared path, so the whole batch may be refused."""
        mark = self.next_mark("b")
        paths = [f"batch/{mark}-{i}" for i in range(BATCH_SIZE)]
        if self.rng.random() < 0.5:
            paths[-1] = self.shared()
        texts = [short_text(f"{mark}m{i}", self.name, self.rng) + f" batch {mark}" for i in range(BATCH_SIZE)]
        commands = [CreateMemory(content=t, path=p) for t, p in zip(texts, paths, strict=True)]
        self.attempt("batch", lambda: self.service.create_many(commands), mark=mark, paths=paths, contents=texts)

    def update(self) -> None:
        """Change one field of whatever lives at a shared path: its text (keeping its mark) or its tags."""
        path = self.shared()
        current = self.service.get(path)
        if not isinstance(current, Success):
            return
        memory = current.unwrap().memory
        mark = memory.content.split()[0]
        self.seq += 1
        if self.rng.random() < 0.5:
            text = short_text(mark, self.name, self.rng, revision=self.seq)
            change = UpdateMemory(ref=memory.id, content=text)
            self.attempt("update", lambda: self.service.update(change), id=memory.id, field="content", value=text)
        else:
            tags = (f"t{self.name}{self.seq}",)
            change = UpdateMemory(ref=memory.id, tags=tags)
            self.attempt("update", lambda: self.service.update(change), id=memory.id, field="tags", value=list(tags))

    def reindex(self) -> None:
        self.attempt("reindex", lambda: self.service.reindex().map(lambda report: {"count": report.memory_count}))


def found(service: MemoryService, query: str, mode: str, memory_id: str) -> bool:
    """Whether a search for `query` ranks `memory_id` among its first ten hits (no floor: ranking alone decides).

    A semantic miss is asked again as deep as the store (MAX_PAGE): an engine's HNSW search is exhaustive when
    asked for as many as it holds, so the second answer is the exact ranking. The hashing embedder gives a long
    memory a vector orthogonal to every other one (its filler words are its own), and a query of its opening words
    matches nothing else: a graph search has no gradient to follow and at times never reaches it (chromadb 1.5.9
    at its default ef_search missed one long memory of 140 in a store of 500 such memories), where a model's
    graded similarities leave a path. The product's part is that the right vector is in the engine and that every
    node searches it: the exact ranking checks exactly that.
    """
    for limit in (10, MAX_PAGE) if mode == "semantic" else (10,):
        asked = SearchMemories(query=query, mode=mode, limit=limit, min_confidence=0.0, min_similarity=0.0)
        match service.search(asked):
            case Success(page) if any(hit.memory.id == memory_id for hit in page.results[:10]):
                return True
    return False


def probe(service: MemoryService, probes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every search this node misses: each probe is a memory's id and the (mode, query) pairs that must find it."""
    return [
        {"id": each["id"], "mode": mode, "query": query[:80]}
        for each in probes
        for mode, query in each["asks"]
        if not found(service, query, mode, each["id"])
    ]


def main(config: dict[str, Any]) -> None:
    home = Path(config["home"])
    service = open_node(home, config["engine"])
    node = Node(config["name"], service, Path(config["log"]), config["seed"])
    print("ready", flush=True)
    told = json.loads(sys.stdin.readline())  # the race begins and ends at the same wall-clock moments on every node
    begin, end = told["begin"], told["end"]
    reindex_at = [begin + fraction * (end - begin) for fraction in sorted(config.get("reindex_at", []))]
    while time.time() < end:
        if reindex_at and time.time() >= reindex_at[0]:
            reindex_at.pop(0)
            node.reindex()
        else:
            node.step()
    print("raced", flush=True)
    probes = json.loads(sys.stdin.readline())
    started = time.monotonic()
    missed = probe(service, probes)
    print(json.dumps({"node": node.name, "missed": missed, "seconds": time.monotonic() - started}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
