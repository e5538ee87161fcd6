"""`memory mcp` end to end: per-token namespaces over HTTP, a pinned stdio server, and stdio requests that must be answered."""

from __future__ import annotations

import json
import selectors
import subprocess
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import MEMORY
from tests.e2e.test_mcp import Mcp, free_port, http_session, server_env, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.server]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


class RawStdio:
    """`memory mcp` over stdio, written to line by line as raw text (the SDK's client cannot send bad lines)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [str(MEMORY), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.send(json.dumps(INITIALIZE).encode())
        assert self.answer()["id"] == 1
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        # a selector, not select.select: a pytest worker that has run many tests may hold descriptors past 1024
        with selectors.DefaultSelector() as waiting:
            waiting.register(self.process.stdout, selectors.EVENT_READ)
            ready = waiting.select(timeout)
        assert ready, "no answer: the request was left unanswered"
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> str:
        self.process.kill()
        _, stderr = self.process.communicate(timeout=30)
        return stderr.decode(errors="replace")


def tool_call(request_id: int, name: str, arguments: str) -> bytes:
    head = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {{"name": "{name}", '
    return (head + f'"arguments": {arguments}}}}}').encode()


def test_stdio_answers_lone_surrogates_bad_bytes_deep_json_and_bad_json_rpc_with_errors(tmp_path: Path) -> None:
    server = RawStdio({**server_env(tmp_path), "MEMORY_BACKEND": "files"})
    try:
        deep = "[" * 20_000 + "]" * 20_000
        bad = {
            2: tool_call(2, "get_memory", '{"path_or_id": "notes/\\ud800"}'),
            3: tool_call(3, "search_memory", '{"query": "x", "user_id": "a", "filter": {"a": ' + deep + "}}"),
            4: tool_call(4, "get_memory", '{"path_or_id": "notes/x"}').replace(b"notes/x", b"notes/\xff\xfe"),
            5: b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": 5}',  # not JSON-RPC (bench/fuzz.py)
        }
        for request_id, line in bad.items():
            server.send(line)
            answer = server.answer()
            assert answer["id"] == request_id
            assert answer["result"]["isError"] is True
            assert answer["result"]["content"][0]["text"].startswith("INVALID_INPUT")
        server.send(tool_call(6, "list_stores", "{}"))
        assert server.answer()["id"] == 6  # and the server still serves
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr


def test_stdio_pinned_by_memory_namespace_stores_and_reads_only_there(tmp_path: Path) -> None:
    server = RawStdio({**server_env(tmp_path), "MEMORY_BACKEND": "files", "MEMORY_NAMESPACE": "user/alice"})
    try:
        server.send(tool_call(2, "list_memories", '{"namespace": ["user"]}'))
        text = server.answer()["result"]["content"][0]["text"]
        assert text.startswith("INVALID_INPUT") and "outside this server's namespace" in text
        server.send(tool_call(3, "prune_memories", '{"namespace": []}'))
        assert server.answer()["result"]["isError"] is True
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr


def recall(portal: BlockingPortal, session: ClientSession, topic: str) -> str:
    """The text of the recall prompt's one message."""
    messages = portal.call(lambda: session.get_prompt("recall", {"topic": topic})).messages
    text: str = messages[0].content.text  # type: ignore[union-attr]
    return text


def test_http_tokens_each_reach_only_their_own_namespace(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **server_env(tmp_path),
        "MEMORY_BACKEND": "files",
        "MEMORY_API_TOKENS": "tok-alice=user/alice,tok-bob=user/bob",
    }
    process = subprocess.Popen(
        [str(MEMORY), "mcp", "--transport", "http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_port(port, process)
        with start_blocking_portal() as portal:
            with portal.wrap_async_context_manager(http_session(url, {"Authorization": "Bearer tok-bob"})) as session:
                bob = Mcp(portal, session)
                secret = bob.ok("add_memory", {"path": "notes/secret", "content": "Bob's platypus"})
                assert secret["namespace"] == ["user", "bob"]
            with portal.wrap_async_context_manager(http_session(url, {"Authorization": "Bearer tok-alice"})) as session:
                alice = Mcp(portal, session)
                assert alice.fails("get_memory", {"path_or_id": secret["id"]}).startswith("MEMORY_NOT_FOUND")
                missing = alice.fails("get_memory", {"path_or_id": "notes/secret"})
                assert secret["id"] not in missing
                mine = alice.ok("add_memory", {"path": "notes/secret", "content": "Alice's otter"})
                assert mine["namespace"] == ["user", "alice"]
                read = portal.call(lambda: session.read_resource("memory://default/memories/notes/secret"))
                assert json.loads(read.contents[0].text)["content"] == "Alice's otter"  # type: ignore[union-attr]
                index = portal.call(lambda: session.read_resource("memory://default/index")).contents[0]
                assert secret["id"] not in index.text and mine["id"] in index.text  # type: ignore[union-attr]
                with pytest.raises(MCPError, match="MEMORY_NOT_FOUND"):
                    portal.call(lambda: session.read_resource(f"memory://default/memories/{secret['id']}"))
                assert "Bob's platypus" not in recall(portal, session, "platypus")  # a prompt runs as its caller
                assert "Alice's otter" in recall(portal, session, "otter")
                found = alice.ok("search_memories", {"query": "platypus", "mode": "keyword", "min_confidence": 0})
                assert "platypus" not in json.dumps(found)
                assert alice.fails("update_memory", {"path_or_id": secret["id"], "content": "x", "namespace": []})
            with portal.wrap_async_context_manager(http_session(url, {"Authorization": "Bearer tok-bob"})) as session:
                assert "Bob's platypus" in recall(portal, session, "platypus")
                assert (
                    Mcp(portal, session).ok("get_memory", {"path_or_id": "notes/secret"})["content"] == "Bob's platypus"
                )
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert b"Traceback" not in stderr
