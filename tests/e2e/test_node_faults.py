"""Three node processes writing over one `chroma run` under the faults of issue 46 other than a pause (which is
tests/e2e/test_paused_writer.py's): the engine killed (SIGKILL) and restarted twice while every node writes; one
node's wall clock 60 s ahead and another's 60 s behind while they write and a third only searches; a node killed
(SIGKILL) in the middle of a batch while the other two write. The nodes write as the racing hosts of
tests/e2e/test_scale_out.py do (the same paths, batches, updates, moves, deletes; race_node.Node), each logging every
answer with the interval it took. Afterwards, read by a fourth host, the audit both suites share (tests/e2e/audit.py,
which allows what a write answered OUTCOME_UNKNOWN may have stored): 0 paths with two live memories, 0 acknowledged
writes lost, 0 batches half present; and what each fault may cost is checked as behaviour: how many tickets each
node passed over as dead (each such is a lease ttl waited out; none after an engine restart, one at most after a
death), and against the lease's ttl (set long, so that a write that waited one out shows), never a measured figure.

The node processes are the paused-writer suite's (one set for the module, each test on a collection of its own)."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory.domain.model import Memory
from tests.chroma_server import HOST, ChromaServer, chroma_server, free_port, start_chroma, stop_chroma
from tests.e2e.audit import findings
from tests.e2e.race_node import open_node
from tests.e2e.test_paused_writer import HANG_S, Hosts, Node, engine_of, hosts, opened

pytestmark = [pytest.mark.slow, pytest.mark.server]
LONG_TTL = 30.0  # the lease's ttl where no write may wait one out (a node's count of tickets passed over as dead)
KILL_TTL = 10.0  # a dead holder's ticket is passed over once, after this long
UNREACHABLE = ("BACKEND_UNAVAILABLE", "OUTCOME_UNKNOWN", "STORAGE_ERROR")  # the engine was not there to answer

__all__ = ["chroma_server", "hosts"]


class Streams:
    """The nodes writing as racing hosts until told to stop; their logs read as they grow."""

    def __init__(self, nodes: list[Node], folder: Path) -> None:
        self.nodes = nodes
        self.stop = folder / f"stop-{uuid.uuid4().hex[:6]}"
        self.logs = {node.name: folder / f"{node.name}-{uuid.uuid4().hex[:6]}.jsonl" for node in nodes}
        for node in nodes:
            node.tell(
                op="stream", name=node.name, log=str(self.logs[node.name]), seed=ord(node.name), stop=str(self.stop)
            )

    def log(self, name: str) -> list[dict[str, Any]]:
        """What the node logged so far (a line still being written is left for the next read)."""
        entries = []
        for line in self.logs[name].read_text().splitlines() if self.logs[name].exists() else []:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return entries

    def await_each(self, what: str, enough: Callable[[list[dict[str, Any]]], bool]) -> None:
        """Wait until every node's log shows `enough` (HANG_S: not a timing, only when to call a node hung)."""
        deadline = time.monotonic() + HANG_S
        while not all(enough(self.log(node.name)) for node in self.nodes):
            assert time.monotonic() < deadline, f"not every node logged {what}: {[n.name for n in self.nodes]}"
            time.sleep(0.05)

    def finish(self) -> list[dict[str, Any]]:
        self.stop.touch()
        for node in self.nodes:
            assert "streamed" in node.hear()
        return [entry for node in self.nodes for entry in self.log(node.name)]


def started(t: float) -> Callable[[list[dict[str, Any]]], bool]:
    """A log holding an acknowledged write begun at `t` or later."""
    return lambda log: any(entry["ok"] and entry["t0"] >= t for entry in log)


def stored(engine: dict[str, str], home: Path) -> dict[str, Memory]:
    """Every memory of the store as a fourth host reads it (deleted ones too)."""
    return {m.id: m for m in open_node(home, engine).export().unwrap()}


def audited(log: list[dict[str, Any]], memories: dict[str, Memory]) -> None:
    problems = findings(log, memories)
    assert not any(problems.values()), json.dumps(problems, indent=1)
    assert any(entry["ok"] and entry["op"] == "batch" for entry in log), "no batch was acknowledged"


@pytest.fixture
def engine_server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A `chroma run` of this test's own, to kill and start again on the same data and port."""
    port = free_port()
    where = {"folder": tmp_path / "engine", "port": port}
    where["process"] = start_chroma(where["folder"], port)
    try:
        yield where
    finally:
        stop_chroma(where["process"])


def test_the_engine_killed_and_restarted_twice_under_three_writing_nodes_loses_and_doubles_nothing(
    hosts: Hosts, engine_server: dict[str, Any], tmp_path: Path
) -> None:
    engine = {"CHROMADB_HOST": HOST, "CHROMADB_PORT": str(engine_server["port"]), "MEMORY_COLLECTION": "memories"}
    nodes = list(opened(hosts, engine, ttl=str(LONG_TTL)).values())
    streams = Streams(nodes, tmp_path)
    backs = []
    try:
        streams.await_each("a write before the first kill", started(0.0))
        for _ in range(2):
            engine_server["process"].send_signal(signal.SIGKILL)
            engine_server["process"].wait(timeout=30)
            down = time.time()
            # every node tried a write while the engine was away, and was told so
            streams.await_each("a failed write", lambda log, down=down: any(e["t0"] > down for e in log))
            engine_server["process"] = start_chroma(engine_server["folder"], engine_server["port"])
            backs.append(time.time())
            streams.await_each("an acknowledged write after the restart", started(backs[-1]))
    finally:
        log = streams.finish()
    firsts = []
    for back in backs:
        for node in nodes:
            first = next(entry for entry in streams.log(node.name) if entry["t0"] >= back)
            assert first.get("code") not in UNREACHABLE, first  # answered: stored, or refused for a race's reason
            firsts.append({"node": node.name, "s": round(first["t1"] - first["t0"], 3), "op": first["op"]})
    # and no write waited out a lease: no node passed a ticket over as dead after its ttl, so every ticket whose
    # release (or claim's answer) the engine's death cut off was given back once the engine answered again (how
    # long the first writes took is a figure for BENCHMARKS.md, bench/lease_faults.py; they are in the message)
    for node in nodes:
        leases = node.ask(op="leases")
        said = f"node {node.name} passed {leases['expiries']} ticket(s) over; first writes: {json.dumps(firsts)}"
        assert leases["claims"] > 0 and leases["expiries"] == 0, said
    down_answers = Counter(entry["code"] for entry in log if not entry["ok"])
    assert set(down_answers) & set(UNREACHABLE), down_answers  # the outages were met
    audited(log, stored(engine, tmp_path / "auditor"))


def test_nodes_with_clocks_a_minute_apart_keep_every_promise_and_a_reader_never_takes_the_lease(
    hosts: Hosts, chroma_server: ChromaServer, tmp_path: Path
) -> None:
    engine = engine_of(chroma_server, "skew")
    # a 60 s ahead, b 60 s behind: both write; c only searches (its own clock right)
    opened(hosts, engine, ttl=str(LONG_TTL), skews={"a": 60.0, "b": -60.0})
    a, b, c = hosts["a"], hosts["b"], hosts["c"]
    assert a.ask(op="add", path="skew/first", content="the store exists before anyone searches it")["ok"]
    stop = tmp_path / "stop-searching"
    c.tell(op="search", query="the otter in the harbour", stop=str(stop))
    streams = Streams([a, b], tmp_path)
    try:
        streams.await_each(
            "a batch stored and a write refused (the writers contend)",
            lambda log: any(e["ok"] and e["op"] == "batch" for e in log) and not all(e["ok"] for e in log),
        )
    finally:
        log = streams.finish()
        stop.touch()
    searched = c.hear()
    assert searched["searched"] and not searched["failed"], searched
    reader = c.ask(op="leases")
    assert reader["claims"] == 0, reader  # the reading node never took the write lease ...
    tickets = open_node(tmp_path / "auditor", engine).locks.tickets("default").unwrap()  # type: ignore[attr-defined]
    assert not [t for t in tickets if t.fields.get("node") == reader["node"]], tickets  # ... as the ledger shows too
    assert {a.ask(op="leases")["node"], b.ask(op="leases")["node"]} & {t.fields.get("node") for t in tickets}
    refused = Counter(entry["code"] for entry in log if not entry["ok"])
    assert set(refused) <= {"DESTINATION_EXISTS", "CONFLICT", "MEMORY_NOT_FOUND"}, refused  # the race's answers only
    memories = stored(engine, tmp_path / "auditor")
    audited(log, memories)
    # the clocks were off: what each writer stamped on the memories it made is a minute from when it made them
    for entry in (e for e in log if e["ok"] and e["op"] in ("add", "create") and e["id"] in memories):
        stamped = memories[entry["id"]].created_at.timestamp()
        assert stamped > entry["t1"] + 30 if entry["node"] == "a" else stamped < entry["t0"] - 30, entry


def test_a_node_killed_mid_batch_costs_each_survivors_next_five_writes_at_most_one_ttl_in_all(
    hosts: Hosts, chroma_server: ChromaServer, tmp_path: Path
) -> None:
    engine = engine_of(chroma_server, "kill")
    opened(hosts, engine, ttl=str(KILL_TTL))
    a, survivors = hosts["a"], [hosts["b"], hosts["c"]]
    assert a.ask(op="add", path="race/p1", content="the store exists before anyone dies")["ok"]
    streams = Streams(survivors, tmp_path)
    try:
        streams.await_each("a write before the kill", started(0.0))
        paths = ["race/p0", "kill/k1", "kill/k2"]  # one of the paths the survivors write at too
        assert a.ask(op="arm", at="commit") == {"armed": "commit"}
        a.tell(op="batch", paths=paths, contents=[f"killed batch {path}" for path in paths])
        assert "paused" in a.hear()  # its records are in the engine, its outcome not claimed, its lease held
        while not a.stopped():
            time.sleep(0.01)
        a.process.send_signal(signal.SIGKILL)
        a.process.wait(timeout=30)
        killed = time.time()
        streams.await_each("five writes after the kill", lambda log: sum(e["t1"] > killed for e in log) >= 5)
    finally:
        log = streams.finish()
    for node in survivors:
        after = [entry for entry in streams.log(node.name) if entry["t1"] > killed][:5]
        spent = sum(entry["t1"] - max(entry["t0"], killed) for entry in after)
        assert spent < 2 * KILL_TTL, (node.name, spent, after)  # a ttl waited once at most, not once a write
        assert node.ask(op="leases")["expiries"] <= 1, node.name  # the dead node's ticket passed over once at most
        assert any(entry["ok"] for entry in after), after
    memories = stored(engine, tmp_path / "auditor")
    assert not [m for m in memories.values() if m.content.startswith("killed batch")], "the dead batch is readable"
    audited(log, memories)
