"""A writer paused (SIGSTOP) between its checks and its engine write, for longer than the write lease lasts, over one
`chroma run` (issue 46): three node processes with their own HOME and data directory; node A stops itself in
chromadb's client just before its write reaches the engine (its path claim, or its records), node B writes to the same
path meanwhile (after passing A's lapsed lease over), then A goes on; node C, a third host, then checks from its own
view (and writes to the path: refused naming the live memory there, or stored when none is). Afterwards: no path holds
two live memories, no path's write was acknowledged to both nodes, and every acknowledged write is there. The same for
two changes of one memory (update, delete, restore): of two nodes that read one revision, one is acknowledged, the
other told CONFLICT, and all three read the winner's state.

The three node processes live as long as the module (a host's process, as `memory serve` keeps one); each test opens
a collection of its own on every node (a fresh HOME under the node's, so fresh side indexes), and a node a test killed
or left stopped is started again for the next.

The lease lasts MEMORY_LEASE_TTL_SECONDS = TTL here so that B passes A over in seconds; nothing here waits on a
timing: the test waits for A to be stopped, for B's answer, and for A's."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chroma_server import ChromaServer, chroma_server
from tests.e2e.test_scale_out import host_environment

pytestmark = [pytest.mark.slow, pytest.mark.server]
ROOT = Path(__file__).resolve().parents[2]
TTL = "8"  # the nodes' lease: short, so B passes A over in seconds, yet renewed (every ttl/3) within it at load 8
HANG_S = 300  # not a timing: how long a node may stay silent before the test calls it hung

__all__ = ["chroma_server"]


class Node:
    """One node process, answering one JSON line per JSON line it is told."""

    def __init__(self, name: str, home: Path, engine: dict[str, str], ttl: str = TTL) -> None:
        self.name = name
        self.home = home
        home.mkdir(parents=True)
        self.stderr = (home / "stderr.log").open("w")
        config = {"home": str(home), "engine": engine}
        env = {**host_environment(home), "MEMORY_LEASE_TTL_SECONDS": ttl}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.paused_node", json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            cwd=ROOT,
            env=env,
        )
        self.hear()

    def hear(self) -> dict[str, Any]:
        said, _, _ = select.select([self.process.stdout], [], [], HANG_S)
        line = self.process.stdout.readline() if said else ""  # type: ignore[union-attr]
        if not line:
            self.process.kill()
            raise AssertionError(f"node {self.name} said nothing: {Path(self.stderr.name).read_text()}")
        return dict(json.loads(line))

    def tell(self, **asked: Any) -> None:
        self.process.stdin.write(json.dumps(asked) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def ask(self, **asked: Any) -> dict[str, Any]:
        self.tell(**asked)
        return self.hear()

    def stopped(self) -> bool:
        return Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=30)
        self.stderr.close()

    def synced(self) -> bool:
        """Whether the node answers (what an earlier test left unread is skipped); a stopped node is woken first."""
        if self.process.poll() is not None:
            return False
        if self.stopped():
            self.process.send_signal(signal.SIGCONT)
        nonce = uuid.uuid4().hex
        self.tell(op="sync", nonce=nonce)
        while True:
            said, _, _ = select.select([self.process.stdout], [], [], HANG_S)
            line = self.process.stdout.readline() if said else ""  # type: ignore[union-attr]
            if not line:
                return False
            if json.loads(line).get("sync") == nonce:
                return True


Hosts = dict[str, Node]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory, chroma_server: ChromaServer) -> Iterator[Hosts]:
    """Three node processes for the module, each on a host of its own (HOME and data directory)."""
    root = tmp_path_factory.mktemp("hosts")
    started: Hosts = {}
    try:
        for name in ("a", "b", "c"):
            started[name] = Node(name, root / f"host-{name}", engine_of(chroma_server, "boot"))
        yield started
    finally:
        for node in started.values():
            node.stop()


def engine_of(server: ChromaServer, prefix: str) -> dict[str, str]:
    """A node's engine settings: the server's address, a collection of its own for a test."""
    return {
        "CHROMADB_HOST": server.host,
        "CHROMADB_PORT": str(server.port),
        "MEMORY_COLLECTION": f"{prefix}-{uuid.uuid4().hex[:10]}",
    }


def opened(hosts: Hosts, engine: dict[str, str], ttl: str = TTL, skews: dict[str, float] | None = None) -> Hosts:
    """Every node (started again when a test killed it or it no longer answers) on a fresh collection."""
    for name, node in list(hosts.items()):
        if not node.synced():
            node.stop()
            hosts[name] = node = Node(name, node.home.parent / f"host-{name}-{uuid.uuid4().hex[:6]}", engine)
        skew = (skews or {}).get(name, 0.0)
        assert node.ask(op="open", engine=engine, ttl=ttl, skew=skew) == {"opened": engine["MEMORY_COLLECTION"]}
    return hosts


@pytest.fixture
def nodes(hosts: Hosts, chroma_server: ChromaServer) -> tuple[Node, Node, Node]:
    opened(hosts, engine_of(chroma_server, "pause"))
    return hosts["a"], hosts["b"], hosts["c"]


def paused_then(
    a: Node, b: Node, at: str, a_write: dict[str, Any], b_write: dict[str, Any], c: Node | None = None
) -> tuple[dict, dict]:
    """A writes, stopping itself at `at` ("claim" or "record"); B writes meanwhile; C (when given) looks from its own
    view while A is stopped: no path held twice, B's write there if acknowledged; A goes on. Both answers."""
    assert a.ask(op="arm", at=at) == {"armed": at}
    a.tell(**a_write)
    paused = a.hear()
    assert "paused" in paused, (paused, a.process.poll())
    while not a.stopped():  # it said so, then stopped itself: wait for the stop itself
        time.sleep(0.01)
    b_answer = b.ask(**b_write)  # B passes A's lapsed lease over (TTL) and writes
    if c is not None:
        made = b_answer["ids"][0] if b_answer["ok"] and b_write["op"] == "add" else None
        audit(c, {made: b_write["path"]} if made else {})
    a.process.send_signal(signal.SIGCONT)
    return a.hear(), b_answer


def third_writer(c: Node, path: str, acknowledged: dict[str, str]) -> None:
    """C, a third host, from its own view: a write to `path` is refused when a live memory is there, and stored when
    none is (a path is never left blocked by a write that did not land); then C's audit."""
    live = c.ask(op="scan")["live"]
    holders = [m["id"] for m in live if m["path"] == path]
    answer = c.ask(op="add", path=path, content=f"c's own memory at {path}")
    if holders:
        assert answer.get("code") == "DESTINATION_EXISTS", (answer, live)
    else:
        assert answer["ok"], (answer, live)
        acknowledged[answer["ids"][0]] = path
    audit(c, acknowledged)


def audit(node: Node, acknowledged: dict[str, str]) -> None:
    """At most one live memory per path, and each acknowledged memory live at its path."""
    live = node.ask(op="scan")["live"]
    paths = [m["path"] for m in live]
    doubled = {p for p in paths if paths.count(p) > 1}
    assert not doubled, live
    at = {m["id"]: m["path"] for m in live}
    lost = {memory_id: path for memory_id, path in acknowledged.items() if at.get(memory_id) != path}
    assert not lost, (lost, live)


def one_side(a_answer: dict[str, Any], b_answer: dict[str, Any]) -> None:
    """The write of one side only was acknowledged; the other was told the path is taken."""
    assert [a_answer["ok"], b_answer["ok"]].count(True) <= 1, (a_answer, b_answer)
    for answer in (a_answer, b_answer):
        if not answer["ok"]:
            assert answer["code"] in ("DESTINATION_EXISTS", "STORAGE_ERROR"), answer


@pytest.mark.parametrize("at", ["claim", "record"])
def test_a_paused_add_and_another_nodes_add_at_its_path_are_never_both_stored(
    nodes: tuple[Node, Node, Node], at: str
) -> None:
    a, b, c = nodes
    a_answer, b_answer = paused_then(
        a,
        b,
        at,
        {"op": "add", "path": "race/p", "content": "from a"},
        {"op": "add", "path": "race/p", "content": "b"},
        c,
    )
    one_side(a_answer, b_answer)
    # "claim": B claimed first, A is refused when it goes on. "record": A held the claim while it slept, but never
    # wrote its record: B, holding the lease A lost, voids A's create and takes the path; A's commit is refused
    assert b_answer["ok"] and a_answer["code"] == "DESTINATION_EXISTS", (a_answer, b_answer)
    assert b_answer["ids"][0] in a_answer["message"], a_answer  # A is told who took the path
    acknowledged = {answer["ids"][0]: "race/p" for answer in (a_answer, b_answer) if answer["ok"]}
    audit(b, acknowledged)
    audit(a, acknowledged)
    third_writer(c, "race/p", acknowledged)


@pytest.mark.parametrize("at", ["claim", "record"])
def test_a_paused_move_and_another_nodes_add_at_its_destination_are_never_both_stored(
    nodes: tuple[Node, Node, Node], at: str
) -> None:
    a, b, c = nodes
    moving = a.ask(op="add", path="race/source", content="the memory a moves")["ids"][0]
    a_answer, b_answer = paused_then(
        a, b, at, {"op": "move", "ref": moving, "to": "race/q"}, {"op": "add", "path": "race/q", "content": "b"}, c
    )
    one_side(a_answer, b_answer)
    if at == "claim":
        assert b_answer["ok"] and a_answer["code"] == "DESTINATION_EXISTS", (a_answer, b_answer)
    else:
        assert b_answer["code"] == "DESTINATION_EXISTS", b_answer
    acknowledged = {moving: "race/q" if a_answer["ok"] else "race/source"}
    if b_answer["ok"]:
        acknowledged[b_answer["ids"][0]] = "race/q"
    audit(b, acknowledged)
    third_writer(c, "race/q", acknowledged)
    third_writer(c, "race/source", acknowledged)


@pytest.mark.parametrize("at", ["claim", "record"])
def test_a_paused_batch_and_another_nodes_add_at_one_of_its_paths_are_never_both_stored(
    nodes: tuple[Node, Node, Node], at: str
) -> None:
    a, b, c = nodes
    paths = ["race/b1", "race/b2", "race/b3"]
    batch = {"op": "batch", "paths": paths, "contents": [f"batch {p}" for p in paths]}
    a_answer, b_answer = paused_then(a, b, at, batch, {"op": "add", "path": "race/b2", "content": "b"}, c)
    one_side(a_answer, b_answer)
    acknowledged = dict(zip(a_answer["ids"], paths, strict=True)) if a_answer["ok"] else {}
    if b_answer["ok"]:
        acknowledged[b_answer["ids"][0]] = "race/b2"
    audit(b, acknowledged)
    live = b.ask(op="scan")["live"]
    mine = [m for m in live if m["content"].startswith("batch ")]
    assert len(mine) in (0, 3), live  # whole or absent
    for path in paths:
        third_writer(c, path, acknowledged)


@pytest.mark.parametrize("at", ["claim", "record"])
def test_a_paused_restore_and_another_nodes_add_at_its_path_are_never_both_stored(
    nodes: tuple[Node, Node, Node], at: str
) -> None:
    a, b, c = nodes
    deleted = a.ask(op="add", path="race/r", content="the memory a deletes, then restores")["ids"][0]
    assert a.ask(op="delete", ref=deleted)["ok"]
    a_answer, b_answer = paused_then(
        a, b, at, {"op": "restore", "ref": deleted}, {"op": "add", "path": "race/r", "content": "b"}, c
    )
    one_side(a_answer, b_answer)
    if at == "claim":
        assert b_answer["ok"] and a_answer["code"] == "DESTINATION_EXISTS", (a_answer, b_answer)
    else:
        assert b_answer["code"] == "DESTINATION_EXISTS", b_answer
    acknowledged = {deleted: "race/r"} if a_answer["ok"] else {}
    if b_answer["ok"]:
        acknowledged[b_answer["ids"][0]] = "race/r"
    audit(b, acknowledged)
    third_writer(c, "race/r", acknowledged)


def test_a_batch_paused_before_its_commit_and_rolled_back_meanwhile_is_refused_never_acknowledged_and_lost(
    nodes: tuple[Node, Node, Node],
) -> None:
    a, b, c = nodes
    paths = ["race/c1", "race/c2", "race/c3"]
    batch = {"op": "batch", "paths": paths, "contents": [f"batch {p}" for p in paths]}
    # A's records are written; it stops before claiming its batch's outcome; B takes the store over, rolls A's
    # batch back (voiding it first) and writes at one of its paths; A resumes, its lease renewed at once
    a_answer, b_answer = paused_then(a, b, "commit", batch, {"op": "add", "path": "race/c2", "content": "b"}, c)
    # the answers whole in the messages (a dict's repr is cut short in pytest's report, a string is not)
    assert b_answer["ok"], f"B's add, after it passed A's lease over, was refused: {json.dumps(b_answer)}"
    # A is told nothing was kept, naming the memory B put at one of its paths meanwhile
    told = json.dumps(a_answer)
    assert not a_answer["ok"] and a_answer["code"] == "DESTINATION_EXISTS", f"A, resumed, was answered {told}"
    assert b_answer["ids"][0] in a_answer["message"] and "Nothing was stored" in a_answer["message"], told
    audit(b, {b_answer["ids"][0]: "race/c2"})
    live = b.ask(op="scan")["live"]
    assert not [m for m in live if m["content"].startswith("batch ")], live
    acknowledged = {b_answer["ids"][0]: "race/c2"}
    for path in paths:
        third_writer(c, path, acknowledged)


@pytest.mark.parametrize("at", ["commit", "record"])
def test_a_node_killed_mid_batch_leaves_no_half_batch_and_no_doubled_path(
    nodes: tuple[Node, Node, Node], at: str
) -> None:
    a, b, c = nodes
    paths = ["race/k1", "race/k2", "race/k3"]
    assert a.ask(op="arm", at=at) == {"armed": at}
    a.tell(op="batch", paths=paths, contents=[f"batch {p}" for p in paths])
    assert "paused" in a.hear()
    while not a.stopped():
        time.sleep(0.01)
    a.process.send_signal(signal.SIGKILL)  # dies stopped: after its records ("commit") or its claims ("record")
    a.process.wait(timeout=30)
    # B takes the store over (after one lease ttl) and rolls A's batch back: A's records there ("commit") are
    # removed and their paths freed; the paths A claimed but never wrote ("record") are freed by voiding A's batch
    answer = b.ask(op="add", path="race/k2", content="b")
    assert answer["ok"], answer
    assert b.ask(op="add", path="race/elsewhere", content="b again")["ok"]
    live = b.ask(op="scan")["live"]
    assert not [m for m in live if m["content"].startswith("batch ")], live  # none of the killed batch
    acknowledged = {answer["ids"][0]: "race/k2"}
    audit(b, acknowledged)
    for path in paths:  # C, the third host: the killed batch's other paths are free, race/k2 is B's
        third_writer(c, path, acknowledged)


# the change each node makes to one memory, and how the memory reads once that change stands
CHANGES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "update": ({"op": "update", "tags": ["a"]}, {"op": "update", "tags": ["b"]}, {"tags": ["a"]}, {"tags": ["b"]}),
    "content": (
        {"op": "update", "content": "a's words"},
        {"op": "update", "content": "b's words"},
        {"content": "a's words"},
        {"content": "b's words"},
    ),
    "delete": ({"op": "delete"}, {"op": "update", "tags": ["b"]}, {"deleted": True}, {"tags": ["b"]}),
    "restore": ({"op": "restore"}, {"op": "restore"}, {"deleted": False}, {"deleted": False}),
}


def reads(node: Node, ref: str, expected: dict[str, Any]) -> dict[str, Any]:
    state = node.ask(op="get", ref=ref)
    assert {key: state[key] for key in expected} == expected, state
    return state


@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("at", ["revision", "record"])
def test_a_paused_change_of_a_memory_and_another_nodes_change_of_it_are_never_both_acknowledged(
    nodes: tuple[Node, Node, Node], at: str, change: str
) -> None:
    a, b, c = nodes
    a_write, b_write, a_state, b_state = CHANGES[change]
    ref = a.ask(op="add", path=f"race/{change}", content="the memory both nodes change")["ids"][0]
    if change == "restore":
        assert a.ask(op="delete", ref=ref)["ok"]
    a_answer, b_answer = paused_then(a, b, at, {**a_write, "ref": ref}, {**b_write, "ref": ref})
    winner, loser, state = (b_answer, a_answer, b_state) if at == "revision" else (a_answer, b_answer, a_state)
    # "revision": B claimed the revision both read first; "record": A held it while it slept, B finds it there
    assert winner["ok"] and loser["code"] == "CONFLICT", (a_answer, b_answer)
    assert ref in loser["message"] and "read it again" in loser["message"], loser
    assert reads(b, ref, state)["revision"] == (2 if change == "restore" else 1)  # (the delete before was 1)
    reads(a, ref, state)
    reads(c, ref, state)


@pytest.mark.parametrize("change", ["update", "content", "delete"])
def test_a_change_paused_after_its_claim_never_stays_over_a_later_acknowledged_one(
    nodes: tuple[Node, Node, Node], change: str
) -> None:
    a, b, c = nodes
    a_write, b_write, _, b_state = CHANGES[change]
    ref = a.ask(op="add", path=f"race/late-{change}", content="the memory both nodes change")["ids"][0]
    assert a.ask(op="arm", at="record") == {"armed": "record"}
    a.tell(**a_write, ref=ref)  # A wins revision 1 and stops before its write reaches the engine
    assert "paused" in a.hear()
    while not a.stopped():
        time.sleep(0.01)
    first = b.ask(**b_write, ref=ref)  # B read revision 0: refused, and A's revision 1 put in place (a delete:
    # B, reading it deleted now, restores it)
    assert first["code"] == "CONFLICT" and "revision 1" in first["message"], first
    again = b.ask(**({"op": "restore"} if change == "delete" else b_write), ref=ref)
    assert again["ok"], again  # B read revision 1 (deleted, for a delete) and wrote revision 2: acknowledged
    a.process.send_signal(signal.SIGCONT)  # A's write of revision 1 lands now, after revision 2's
    late = a.hear()
    assert late.get("code") == "CONFLICT" and "revision 2" in late.get("message", ""), late
    expected = {"deleted": False} if change == "delete" else b_state
    assert reads(b, ref, expected)["revision"] == 2  # revision 2 is what stays: A's late write was put right
    reads(a, ref, expected)
    reads(c, ref, expected)


@pytest.mark.parametrize("op", ["move", "restore"])
def test_a_mover_or_restorer_killed_after_claiming_its_path_leaves_the_path_to_the_other_nodes(
    nodes: tuple[Node, Node, Node], op: str
) -> None:
    a, b, c = nodes
    ref = a.ask(op="add", path="race/from", content="the memory a moves or restores")["ids"][0]
    if op == "restore":
        assert a.ask(op="delete", ref=ref)["ok"]
    target = "race/to" if op == "move" else "race/from"
    assert a.ask(op="arm", at="revision") == {"armed": "revision"}
    a.tell(op=op, ref=ref, **({"to": target} if op == "move" else {}))
    assert "paused" in a.hear()  # it claimed the path; it dies claiming the memory's next revision
    while not a.stopped():
        time.sleep(0.01)
    a.process.send_signal(signal.SIGKILL)
    a.process.wait(timeout=30)
    # B passes A's dead lease over and takes the path: A's write is made void (its revision claimed by B, with the
    # memory as it was), so it can never land; the memory stays where A found it
    answer = b.ask(op="add", path=target, content="b, after a died")
    assert answer["ok"], answer
    acknowledged = {answer["ids"][0]: target} | ({ref: "race/from"} if op == "move" else {})
    audit(b, acknowledged)
    third_writer(c, "race/from", acknowledged)
    reads(c, ref, {"deleted": op == "restore"})
