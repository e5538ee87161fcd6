"""No dirty reads across nodes over one `chroma run` (issue 46): node A stops itself (SIGSTOP, in chromadb's client)
after writing a batch's records and before claiming its outcome; node B's search (by meaning and by keyword), get
and list do not answer those records; once A commits, B answers all of them; if A dies instead, B rolls the batch
back and the records are gone from the engine. Nothing here waits on a timing but the lease a dead A leaves."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chroma_server import ChromaServer, chroma_server
from tests.e2e.test_paused_writer import Node

pytestmark = [pytest.mark.slow, pytest.mark.server]
LONG_TTL = "30"  # A's pause (B's reads) stays well inside A's lease, so A's commit is not refused as a courtesy
SHORT_TTL = "1.5"  # B passes a dead A's lease over in seconds
QUERY = "zanzibar harbour ferry timetable"
CONTENTS = [f"The zanzibar harbour ferry timetable, page {n}" for n in range(3)]
NOTHING = {"hybrid": [], "keyword": [], "get": [], "list": []}

__all__ = ["chroma_server"]


def two_nodes(tmp_path: Path, server: ChromaServer, ttl: str) -> tuple[Node, Node]:
    engine = {
        "CHROMADB_HOST": server.host,
        "CHROMADB_PORT": str(server.port),
        "MEMORY_COLLECTION": f"dirty-{uuid.uuid4().hex[:10]}",
    }
    a = Node("a", tmp_path / "host-a", engine, ttl)
    try:
        return a, Node("b", tmp_path / "host-b", engine, ttl)
    except BaseException:
        a.stop()
        raise


@pytest.fixture(params=[LONG_TTL, SHORT_TTL], ids=["committed", "rolled-back"])
def nodes(
    request: pytest.FixtureRequest, tmp_path: Path, chroma_server: ChromaServer
) -> Iterator[tuple[Node, Node, str]]:
    a, b = two_nodes(tmp_path, chroma_server, request.param)
    try:
        yield a, b, request.param
    finally:
        a.stop()
        b.stop()


def test_a_batch_is_unread_on_another_node_until_it_commits_and_gone_if_it_never_does(
    nodes: tuple[Node, Node, str],
) -> None:
    a, b, ttl = nodes
    assert b.ask(op="add", path="warm/up", content="a ferry to the harbour")["ok"]  # B's store and feeds exist
    paths = [f"ferry/p{n}" for n in range(3)]
    assert a.ask(op="arm", at="commit") == {"armed": "commit"}
    a.tell(op="batch", paths=paths, contents=CONTENTS)
    assert "paused" in a.hear()  # its records are in the engine; its outcome is not claimed yet
    while not a.stopped():
        time.sleep(0.01)
    live = b.ask(op="scan")["live"]
    assert [m["path"] for m in live] == ["warm/up"], live  # B's own memory only
    ids = sorted(set(b.ask(op="raw")["ids"]) - {live[0]["id"]})
    assert len(ids) == 3, ids  # A's three records are in the engine, uncommitted
    assert b.ask(op="read", query=QUERY, ids=ids) == NOTHING
    if ttl == LONG_TTL:
        a.process.send_signal(signal.SIGCONT)
        answer = a.hear()
        assert answer["ok"], answer
        assert sorted(answer["ids"]) == ids
        everything = {"hybrid": ids, "keyword": ids, "get": ids, "list": ids}
        assert b.ask(op="read", query=QUERY, ids=ids) == everything
    else:
        a.process.send_signal(signal.SIGKILL)  # dies stopped, before its batch's outcome
        a.process.wait(timeout=30)
        assert b.ask(op="add", path="ferry/p1", content="b, after a died")["ok"]  # rolls A's batch back
        assert b.ask(op="read", query=QUERY, ids=ids) == NOTHING
        assert not set(ids) & set(b.ask(op="raw")["ids"])  # gone from the engine
