"""Fuzz every door (REST, MCP over stdio and HTTP, a CLI sample) with generated nasty requests; print JSON counts."""

# python bench/fuzz.py [--door rest|mcp-stdio|mcp-http|cli|all] [--requests N] [--seed S] [--out FILE]
#
# Each door gets its own sandbox (HOME, TMPDIR, working directory, MEMORY_CONFIG and MEMORY_DATA_DIR under a
# fresh temporary directory) and its own server on a free loopback port (REST: `memory serve`, MCP over HTTP:
# `memory mcp --transport http`, both with a token and two per-tenant tokens; MCP stdio: `memory mcp`; CLI: one
# `memory` process per request). Requests are generated from a seeded random source: valid operations so state
# builds up (create, then get / update / move / delete the ids and paths created), mixed with wrong types, huge,
# deep, unicode, lone-surrogate and control-character strings, traversal paths, unknown fields, bad enums,
# oversized bodies, bad bytes, bad tokens and bad Host / Origin / Content-Type headers. Counted per door:
# requests, answers, statuses (HTTP) or results and tool errors (MCP) or exit codes (CLI), tracebacks (in any
# answer, stderr or server log), unanswered requests (no answer within the timeout) and files created in the
# sandbox outside the data directory. Every loop is bounded in count and time; servers are killed at the end.

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import httpcore
import httpx

T = TypeVar("T")
MEMORY = Path(sys.executable).parent / "memory"
TRACEBACK = "Traceback (most recent call last)"
LOOPBACK = "127.0.0.1"
DOORS = ("rest", "mcp-stdio", "mcp-http", "cli")
TOKEN = "fuzz-main-token"
TENANT_TOKENS = {"fuzz-alice-token": "user/alice", "fuzz-bob-token": "user/bob"}
REQUEST_TIMEOUT = 120.0  # seconds for one answer (the first embedding loads the model)
START_TIMEOUT = 120.0
EXAMPLES = 5  # request descriptions kept per kind of failure

WORDS = [
    "python",
    "vim",
    "dark",
    "mode",
    "tea",
    "lisbon",
    "deploy",
    "tuesday",
    "approvals",
    "platypus",
    "otter",
    "mango",
    "editor",
    "theme",
    "rust",
    "kernel",
    "coffee",
    "budget",
    "review",
    "travel",
    "piano",
    "garden",
    "holiday",
    "invoice",
    "meeting",
    "allergy",
    "peanut",
]


# --- the sandbox -------------------------------------------------------------------------------------------------


class Sandbox:
    """A run's own HOME, TMPDIR, working directory, config and data directory, listed before and after."""

    def __init__(self, door: str) -> None:
        self.top = Path(tempfile.mkdtemp(prefix=f"agent-memory-fuzz-{door}-"))
        self.root = self.top / "root"  # everything the processes may touch lives here
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        self.cwd = self.root / "cwd"
        self.data = self.home / ".local" / "share" / "agent-memory"
        self.logs = self.top / "logs"  # the servers' stderr: ours, not theirs
        self.config = self.home / ".config" / "agent-memory" / "config.toml"  # empty: MEMORY_CONFIG must name a file
        for folder in (self.home, self.tmp, self.cwd, self.data, self.logs, self.config.parent):
            folder.mkdir(parents=True, exist_ok=True)
        self.config.touch()
        self.canary = f"agent-memory-fuzz-canary-{uuid.uuid4().hex[:12]}"
        self.before = self.listing()

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "MEMORY_CONFIG": str(self.config),
            "MEMORY_DATA_DIR": str(self.data),
            "MEMORY_BACKEND": "chroma",
            "MEMORY_SERVER": "off",  # every command its own process, as the fuzz measured them
            "ANONYMIZED_TELEMETRY": "False",
            **extra,
        }

    def listing(self) -> set[str]:
        """Every file and folder under the sandbox's top but the data directory and our logs."""
        found: set[str] = set()
        skip = {self.data, self.logs}
        for folder, dirs, files in os.walk(self.top):
            here = Path(folder)
            dirs[:] = [name for name in dirs if here / name not in skip]
            found.update(str((here / name).relative_to(self.top)) for name in (*dirs, *files))
        return found

    def strays(self) -> list[str]:
        """What appeared outside the data directory since the start, and any canary an absolute path reached."""
        new = sorted(self.listing() - self.before)
        for place in (Path(tempfile.gettempdir()), Path("/"), self.top.parent):
            if (place / self.canary).exists():
                new.append(str(place / self.canary))
        return new

    def log_tracebacks(self) -> int:
        return sum(path.read_text(errors="replace").count(TRACEBACK) for path in self.logs.glob("*.log"))

    def remove(self) -> None:
        shutil.rmtree(self.top, ignore_errors=True)


# --- generated values --------------------------------------------------------------------------------------------


class Gen:
    """Nasty but valid-looking values from one seeded random source, plus the ids and paths created so far."""

    def __init__(self, seed: int, sandbox: Sandbox) -> None:
        self.rng = random.Random(seed)
        self.sandbox = sandbox
        self.known: list[dict[str, str]] = []  # {"id", "path"} of memories created and not removed
        self.counter = 0

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: Iterable[T]) -> T:
        return self.rng.choice(list(options))

    def weighted(self, weights: dict[str, float]) -> str:
        return self.rng.choices(list(weights), weights=list(weights.values()))[0]

    def word(self) -> str:
        return self.pick(WORDS)

    def sentence(self) -> str:
        return " ".join(self.word() for _ in range(self.rng.randint(2, 12)))

    def fresh_path(self) -> str:
        self.counter += 1
        return f"fuzz/{self.word()}/{self.word()}-{self.counter}"

    def traversal(self) -> str:
        canary = self.sandbox.canary
        return self.pick(
            [
                f"../{canary}",
                f"../../../../../{canary}/x",
                f"a/../../{canary}",
                f"%2e%2e/%2e%2e/{canary}",
                f"..%2f..%2f{canary}",
                f"%252e%252e%252f{canary}",
                f"..\\..\\{canary}",
                f"a\\..\\..\\{canary}",
                f"/tmp/{canary}/x",
                f"/{canary}",
                f"{self.sandbox.root}/{canary}",
                f"~/{canary}",
                f"./a/./{canary}",
                f"a//{canary}",
                f"a/\x00/{canary}",
                f"a/%00/{canary}",
                "..",
                ".",
                "/",
                "//",
                "CON/aux",
                "a/" * 40 + "b",
                "x" * 700 + "/y",
                "\u2025/\uff0e\uff0e/" + canary,
            ]
        )

    def nasty_string(self) -> str:
        kind = self.rng.randrange(12)
        if kind == 0:
            return self.pick(["", " ", "\t\n", "\r\n", "\u3000"])
        if kind == 1:
            return "".join(chr(self.rng.choice([*range(32), 127, 0x85, 0x2028, 0x2029])) for _ in range(8))
        if kind == 2:
            return self.pick(["\ud800", "a\udfffb", "\udbff", "x\udc00\ud800y", "\ud83d"])
        if kind == 3:
            return self.pick(
                ["日本語のメモ", "😀" * 50, "e\u0301", "\u202eevil", "\u200b\ufeff", "\uffff\U0010ffff", "ÿ" * 9]
            )
        if kind == 4:
            return self.pick(["x", "é", "日", "😀"]) * self.pick([1000, 10_000, 100_001, 250_000])
        if kind == 5:
            return self.pick(
                ["%s%s%n", "{0}{1}", "${jndi:ldap://x}", "'; DROP TABLE memories; --", "<script>", "\\", '"']
            )
        if kind == 6:
            return self.pick(["null", "NaN", "-1", "1e309", "true", "[]", "{}"])
        if kind == 7:
            return self.traversal()
        if kind == 8:
            return self.pick(["user/alice", "user/bob", "user", "user//x", "/".join(["a"] * 20), "u" * 600])
        if kind == 9:
            return "-" + self.word()  # looks like a flag on a command line
        return self.sentence()

    def number(self) -> Any:
        return self.pick([0, -1, 1, 7, 101, 1001, 2**31, 2**63, 2**70, -(2**70), 0.5, -0.0, 1e308, 1e-308])

    def anything(self, depth: int = 0) -> Any:
        kind = self.rng.randrange(7 if depth < 3 else 4)
        if kind == 0:
            return self.number()
        if kind == 1:
            return self.pick([True, False, None])
        if kind in (2, 3):
            return self.nasty_string()
        if kind == 4:
            return [self.anything(depth + 1) for _ in range(self.rng.randint(0, 4))]
        if kind == 5:
            return {self.nasty_string()[:40]: self.anything(depth + 1) for _ in range(self.rng.randint(0, 4))}
        return self.deep(self.pick([10, 65, 500]))

    def deep(self, levels: int) -> Any:
        value: Any = "bottom"
        for _ in range(levels):
            value = [value] if self.chance(0.5) else {"a": value}
        return value

    def ref(self) -> str:
        """An id or path of a memory created earlier (most of the time), else something nasty."""
        if self.known and self.chance(0.75):
            memory = self.pick(self.known)
            return memory["id"] if self.chance(0.5) else memory["path"]
        return self.pick([self.nasty_string(), str(uuid.uuid4()), "fuzz/none/here", self.traversal()])

    def namespace(self) -> list[str]:
        if self.chance(0.15):  # huge, empty, or with labels that are not labels
            return self.pick(
                [["x"] * 40, ["a" * 600], [""], ["user", "../bob"], ["user", "ali ce"], ["user", "\ud800"]]
            )
        return self.pick(
            [["user", "alice"], ["user", "bob"], ["user", "alice", "work"], ["user"], [], ["org", self.word()]]
        )

    def tags(self) -> list[str]:
        return [self.word() for _ in range(self.rng.randint(0, 4))]

    def timestamp(self) -> str:
        return self.pick(
            ["2099-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2026-12-31T23:59:00+05:30", "9999-12-31T23:59:59-14:00"]
        )

    def remember(self, payload: Any) -> None:
        if isinstance(payload, dict) and isinstance(payload.get("id"), str):
            self.known.append({"id": payload["id"], "path": str(payload.get("path") or payload["id"])})
            del self.known[:-500]

    def forget(self, ref: str) -> None:
        self.known = [memory for memory in self.known if ref not in (memory["id"], memory["path"])]

    # --- whole bodies, as bytes that may not be JSON ----------------------------------------------------

    def mutate_object(self, body: dict[str, Any], fields: list[str]) -> dict[str, Any]:
        """One change a confused or hostile client makes: a wrong type, a nasty string, an unknown or missing field."""
        body = dict(body)
        kind = self.rng.randrange(6)
        if kind == 0 and body:
            body.pop(self.pick(body))
        elif kind == 1:
            body[self.pick([*fields, "namepsace", "contnet", "globals", "__proto__", "id", "deleted"])] = (
                self.anything()
            )
        elif kind == 2:
            body[self.pick(fields)] = self.nasty_string()
        elif kind == 3:
            body[self.pick(fields)] = self.anything()
        elif kind == 4:
            body["content"] = "x" * self.pick([100_001, 600_000, 1_100_000])
        else:
            body[self.nasty_string()[:60]] = self.word()
        return body

    def encode(self, value: Any) -> bytes:
        """JSON text (ASCII escapes, so a lone surrogate goes out as \\ud800), sometimes broken at the byte level."""
        try:
            raw = json.dumps(value).encode()
        except ValueError:
            raw = b"{}"
        if not self.chance(0.12):
            return raw
        kind = self.rng.randrange(11)
        if kind == 0:
            return raw[: self.rng.randint(0, max(len(raw) - 1, 0))]
        if kind == 1:
            at = raw.find(b'"', 1) + 1 or 1
            return (
                raw[:at]
                + self.pick([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xfe\xff"])
                + raw[at:]
            )
        if kind == 2:
            levels = self.pick([65, 1000, 100_000])
            return b'{"content": ' + b"[" * levels + b"]" * levels + b"}"
        if kind == 3:
            return self.pick([b"", b"[]", b"1", b'"s"', b"null", b"{", b"}{", b"{}{}", b"{,}"])
        if kind == 4:
            return raw.replace(b"}", b', "x": NaN, "y": Infinity}', 1)
        if kind == 5:
            return b"\xef\xbb\xbf" + raw
        if kind == 6:
            return json.dumps(value, ensure_ascii=False).encode("utf-16", "surrogatepass")
        if kind == 7:
            return raw.replace(b"{", b'{"content": "a", "content": 5, ', 1)
        if kind == 8:
            return raw + b" trailing"
        if kind == 9:
            return raw.replace(b'"', b"'")
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")  # raw surrogate bytes


# --- counting --------------------------------------------------------------------------------------------------


class Tally:
    """Counts of one door and a few examples of each failure."""

    def __init__(self, door: str) -> None:
        self.door = door
        self.counts: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()  # MCP tool errors by their code
        self.examples: dict[str, list[str]] = {}
        self.started = time.monotonic()

    def add(self, key: str, amount: int = 1) -> None:
        self.counts[key] += amount

    def example(self, kind: str, description: str) -> None:
        kept = self.examples.setdefault(kind, [])
        if len(kept) < EXAMPLES:
            kept.append(description[:400])

    def report(self, sandbox: Sandbox, extra: dict[str, Any]) -> dict[str, Any]:
        log_tracebacks = sandbox.log_tracebacks()
        strays = sandbox.strays()
        counts = dict(sorted(self.counts.items()))
        tracebacks = counts.get("tracebacks", 0) + log_tracebacks
        body: dict[str, Any] = {
            "door": self.door,
            **counts,
            "tracebacks": tracebacks,
            "tracebacks_in_logs": log_tracebacks,
            "unanswered": counts.get("unanswered", 0),
            "files_outside_data_dir": len(strays),
            "stray_files": strays[:20],
            **extra,
            "seconds": round(time.monotonic() - self.started, 1),
            "examples": self.examples,
        }
        if self.statuses:
            body["statuses"] = dict(sorted(self.statuses.items()))
        if self.codes:
            body["tool_error_codes"] = dict(sorted(self.codes.items()))
        failed = (
            tracebacks
            or body["unanswered"]
            or strays
            or counts.get("5xx", 0)
            or counts.get("internal_errors", 0)
            or extra.get("server_exit")
        )
        body["ok"] = not failed
        return body


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def server(
    argv: list[str], sandbox: Sandbox, env: dict[str, str], port: int, name: str
) -> Iterator[subprocess.Popen[bytes]]:
    """A `memory` server on a loopback port, its stderr in the sandbox's logs; killed on the way out."""
    with (sandbox.logs / f"{name}.log").open("wb") as log:
        process = subprocess.Popen(
            [str(MEMORY), *argv], env=env, cwd=sandbox.cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"`memory {' '.join(argv)}` exited with {process.returncode} before listening")
                with suppress(OSError):
                    socket.create_connection((LOOPBACK, port), timeout=0.5).close()
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"`memory {' '.join(argv)}` did not listen within {START_TIMEOUT} s")
                time.sleep(0.1)
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> int | None:
    """Terminate, then kill; the exit code if the process had already died on its own, else None."""
    died = process.poll()
    if died is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
    return died


def patience(tally: Tally) -> float:
    """How long to wait for an answer: long enough for the model to load, shorter once a door has gone silent."""
    return REQUEST_TIMEOUT if tally.counts["unanswered"] < 3 else 15.0


def has_traceback(text: str | bytes) -> bool:
    if isinstance(text, bytes):
        return TRACEBACK.encode() in text
    return TRACEBACK in text


def short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 200 else f"{text[:200]}…({len(text)} chars)"


# --- REST ------------------------------------------------------------------------------------------------------


class RestRequest:
    def __init__(self, method: str, target: str, body: bytes | None = None, headers: dict[str, str] | None = None):
        self.method = method
        self.target = target
        self.body = body
        self.headers = headers or {}
        self.expect: Callable[[int, Any], None] | None = None  # what to learn from a success

    def describe(self) -> str:
        head = {key: short(value) for key, value in self.headers.items() if key != "Authorization"}
        return f"{self.method} {short(self.target)} {head} {short(self.body or b'')}"


def quote(text: str) -> str:
    """Percent-encode for a URL, keeping '/' and '%' so traversal and pre-encoded forms go out as written."""
    from urllib.parse import quote as _quote

    return _quote(text.encode("utf-8", "surrogatepass"), safe="/%")


class RestFuzzer:
    """Requests for `memory serve`: every route, valid and broken, with headers a browser or attacker would send."""

    def __init__(self, gen: Gen) -> None:
        self.gen = gen

    def query(self, pairs: dict[str, Any]) -> str:
        gen = self.gen
        items = [(key, value) for key, value in pairs.items() if value is not None]
        if gen.chance(0.05):
            items.append((gen.pick(["namepsace", "hard", "store", "x", "namespace"]), gen.nasty_string()[:80]))
        if gen.chance(0.02):
            items.append(("pad", "q" * gen.pick([9_000, 20_000, 70_000])))
        text = "&".join(f"{quote(str(key))}={quote(str(value))}" for key, value in items)
        return f"?{text}" if text else ""

    def namespace_param(self) -> str | None:
        return "/".join(self.gen.namespace()) if self.gen.chance(0.15) else None

    def store_param(self) -> str | None:
        gen = self.gen
        return gen.pick(["fuzz-two", gen.nasty_string()[:60], "default"]) if gen.chance(0.08) else None

    def ref_target(self, ref: str) -> str:
        raw = ref.isascii() and ref.isprintable() and " " not in ref
        return ref if raw and self.gen.chance(0.1) else quote(ref)  # sometimes raw: '?', '#', '%' as they are

    def next(self) -> RestRequest:
        gen = self.gen
        route = gen.weighted(
            {
                "create": 18, "get": 14, "update": 10, "delete": 6, "move": 5, "reinforce": 4, "list": 6,
                "recent": 5, "search": 12, "prune": 1, "reindex": 0.2, "stores": 3, "category": 4,
                "status": 2, "health": 1, "docs": 0.3, "unknown": 3, "method": 2,
            }
        )  # fmt: skip
        request = getattr(self, f"_{route}")()
        return self.headers(request)

    def _create(self) -> RestRequest:
        gen = self.gen
        body: dict[str, Any] = {"content": gen.sentence()}
        if gen.chance(0.7):
            body["path"] = gen.fresh_path() if gen.chance(0.85) else gen.traversal()
        if gen.chance(0.3):
            body["tags"] = gen.tags()
        if gen.chance(0.2):
            body["decay_policy"] = gen.pick(["stable", "contextual", "reinforceable", "forever", ""])
        if gen.chance(0.15):
            body["namespace"] = gen.namespace()
        if gen.chance(0.15):
            body["expires_at"] = gen.timestamp()
        if gen.chance(0.1):
            body["citations"] = [gen.sentence()]
        if gen.chance(0.1):
            body["global"] = gen.pick([True, False, "yes", 1])
        fields = ["content", "path", "tags", "namespace", "expires_at", "created_at", "agent", "project", "thread"]
        if gen.chance(0.35):
            body = gen.mutate_object(body, fields)
        request = RestRequest("POST", "/memories" + self.query({"store": self.store_param()}), gen.encode(body))
        request.expect = lambda status, payload: gen.remember(payload) if status == 201 else None
        return request

    def _get(self) -> RestRequest:
        gen = self.gen
        query = {"include_expired": gen.pick([None, "true", "false", "maybe"]), "namespace": self.namespace_param()}
        return RestRequest("GET", f"/memories/{self.ref_target(gen.ref())}" + self.query(query))

    def _update(self) -> RestRequest:
        gen = self.gen
        body: dict[str, Any] = {
            gen.pick(["content", "tags", "citations", "source", "expires_at", "clear_expiry", "decay_policy"]): None
        }
        key = next(iter(body))
        body[key] = {
            "content": gen.sentence(),
            "tags": gen.tags(),
            "citations": gen.tags(),
            "source": gen.word(),
            "expires_at": gen.timestamp(),
            "clear_expiry": True,
            "decay_policy": gen.pick(["stable", "reinforceable", "bogus"]),
        }[key]
        if gen.chance(0.35):
            body = gen.mutate_object(body, ["content", "tags", "citations", "namespace", "ref", "global", "agent"])
        target = f"/memories/{self.ref_target(gen.ref())}" + self.query({"namespace": self.namespace_param()})
        return RestRequest("PATCH", target, gen.encode(body))

    def _delete(self) -> RestRequest:
        gen = self.gen
        ref = gen.ref()
        hard = gen.pick([None, "true", "false", "1", "yes!"])
        request = RestRequest("DELETE", f"/memories/{self.ref_target(ref)}" + self.query({"hard": hard}))
        if hard == "true":
            request.expect = lambda status, _payload: gen.forget(ref) if status == 200 else None
        return request

    def _move(self) -> RestRequest:
        gen = self.gen
        ref = gen.ref()
        body: Any = {"destination": gen.fresh_path() if gen.chance(0.7) else gen.nasty_string()}
        if gen.chance(0.25):
            body = gen.mutate_object(body, ["destination", "to", "from"])
        request = RestRequest(
            "POST", f"/memories/{self.ref_target(ref)}/move", None if gen.chance(0.05) else gen.encode(body)
        )

        def moved(status: int, payload: Any) -> None:
            if status == 200:
                gen.forget(ref)
                gen.remember(payload)

        request.expect = moved
        return request

    def _reinforce(self) -> RestRequest:
        gen = self.gen
        action = gen.pick(["reinforce", "reinforce", "explode", ""])
        return RestRequest("POST", f"/memories/{self.ref_target(gen.ref())}/{action}")

    def _list(self) -> RestRequest:
        gen = self.gen
        query = {
            "category": gen.pick([None, "fuzz", f"fuzz/{gen.word()}", gen.nasty_string()[:100]]),
            "limit": gen.pick([None, 1, 50, 1000, 1001, 0, -5, "ten"]),
            "offset": gen.pick([None, 0, 3, -1, 2**70]),
            "include_expired": gen.pick([None, "true"]),
            "namespace": self.namespace_param(),
            "store": self.store_param(),
        }
        return RestRequest("GET", "/memories" + self.query(query))

    def _recent(self) -> RestRequest:
        gen = self.gen
        query = {"limit": gen.pick([None, 1, 5, 100, 101, 0, -1, "x", 2**64]), "category": gen.pick([None, "fuzz"])}
        return RestRequest("GET", "/recent" + self.query({**query, "namespace": self.namespace_param()}))

    def _search(self) -> RestRequest:
        gen = self.gen
        body: dict[str, Any] = {"query": gen.sentence() if gen.chance(0.8) else gen.nasty_string()}
        if gen.chance(0.3):
            body["mode"] = gen.pick(["hybrid", "semantic", "keyword", "fuzzy"])
        if gen.chance(0.2):
            body["limit"] = gen.pick([1, 5, 100, 0, -1, 10_000])
        if gen.chance(0.2):
            body["min_confidence"] = gen.pick([0, 0.3, 1, 2, -1])
        if gen.chance(0.2):
            body["namespace"] = gen.namespace()
        if gen.chance(0.15):
            body["tags"] = gen.tags()
        if gen.chance(0.1):
            body["path_prefix"] = gen.pick(["fuzz", gen.traversal()])
        if gen.chance(0.35):
            body = gen.mutate_object(body, ["query", "mode", "limit", "namespace", "tags", "global", "min_confidence"])
        return RestRequest("POST", "/search" + self.query({"store": self.store_param()}), gen.encode(body))

    def _prune(self) -> RestRequest:
        gen = self.gen
        body = None if gen.chance(0.2) else gen.encode({"dry_run": gen.pick([True, True, False, "no", None])})
        return RestRequest("POST", "/prune" + self.query({"namespace": self.namespace_param()}), body)

    def _reindex(self) -> RestRequest:
        return RestRequest("POST", "/reindex" + self.query({"store": self.gen.pick(["fuzz-two", "missing-store"])}))

    def _stores(self) -> RestRequest:
        gen = self.gen
        if gen.chance(0.5):
            return RestRequest("GET", "/stores")
        name = gen.pick([f"fuzz-{gen.word()}-{gen.rng.randrange(50)}", gen.nasty_string()[:80], "Bad Name!"])
        return RestRequest(
            "POST",
            "/stores",
            gen.encode(gen.mutate_object({"name": name}, ["name"]) if gen.chance(0.3) else {"name": name}),
        )

    def _category(self) -> RestRequest:
        gen = self.gen
        path = gen.pick([f"fuzz/{gen.word()}", "fuzz", gen.nasty_string()[:200], gen.traversal()])
        kind = gen.rng.randrange(3)
        if kind == 0:
            body = {"path": path, "description": gen.pick([gen.sentence(), "d" * 501, gen.nasty_string()])}
            return RestRequest("POST", "/categories", gen.encode(body))
        if kind == 1:
            body = {"description": gen.pick([gen.sentence(), "d" * 501])}
            return RestRequest("PUT", f"/categories/{self.ref_target(path)}/description", gen.encode(body))
        target = f"/categories/{self.ref_target(path)}" + self.query({"namespace": self.namespace_param()})
        return RestRequest("DELETE", target)

    def _status(self) -> RestRequest:
        return RestRequest("GET", "/status" + self.query({"store": self.store_param()}))

    def _health(self) -> RestRequest:
        return RestRequest("GET", "/health")

    def _docs(self) -> RestRequest:
        return RestRequest("GET", self.gen.pick(["/openapi.json", "/docs", "/docs/openapi.json"]))

    def _unknown(self) -> RestRequest:
        gen = self.gen
        target = gen.pick(
            ["/", "/admin", "/memories/", "/categories/", "/%2e%2e/%2e%2e/etc/passwd", "/../../etc/passwd",
             "/memories/../../etc/passwd", "//memories", "/memories%2f..%2f..", "/search/../stores", "*",
             "/" + "a/" * 300, "/%C3%A9", "/memories/" + "%ff%fe"]
        )  # fmt: skip
        return RestRequest(
            gen.pick(["GET", "POST", "DELETE"]), target, gen.encode({"x": 1}) if gen.chance(0.3) else None
        )

    def _method(self) -> RestRequest:
        gen = self.gen
        method = gen.pick(["PUT", "OPTIONS", "HEAD", "TRACE", "PATCH", "CONNECT", "BREW", "get"])
        return RestRequest(
            method, gen.pick(["/memories", "/search", "/stores", "/health", f"/memories/{quote(gen.ref())}"])
        )

    def headers(self, request: RestRequest) -> RestRequest:
        gen = self.gen
        headers: dict[str, str] = {"Host": f"{LOOPBACK}"}
        token = gen.pick([TOKEN] * 6 + list(TENANT_TOKENS))
        headers["Authorization"] = f"Bearer {token}"
        if request.body is not None:
            headers["Content-Type"] = "application/json"
        if gen.chance(0.12):
            auth = gen.pick([None, "Bearer wrong", "Bearer", "Basic Zm9vOmJhcg==", f"bearer {TOKEN}",
                             f"Bearer {TOKEN}x", "Bearer " + "t" * 10_000, f"Token {TOKEN}"])  # fmt: skip
            if auth is None:
                headers.pop("Authorization")
            else:
                headers["Authorization"] = auth
        if gen.chance(0.06):
            headers["Host"] = gen.pick(["attacker.example", "127.0.0.1.nip.io", "localhost.evil", "localhost:99999",
                                        "[::1]", "localhost", "127.0.0.1:abc", "h" * 300, "0x7f000001", "127.1"])  # fmt: skip
        if gen.chance(0.06):
            headers["Origin"] = gen.pick(["http://evil.example", "null", "http://127.0.0.1:1", "file://",
                                          "http://localhost.evil", "http://localhost", "https://127.0.0.1", "%%%"])  # fmt: skip
        if gen.chance(0.08):
            content_type = gen.pick(
                [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/json; charset=utf-16", "application/json; charset=latin-1", "application/jsonx",
                 "", "APPLICATION/JSON", "application/json; charset=UTF-8", "application/merge-patch+json", "*/*"]
            )  # fmt: skip
            if content_type is None:
                headers.pop("Content-Type", None)
            else:
                headers["Content-Type"] = content_type
        if gen.chance(0.02):
            headers["X-Pad"] = "p" * gen.pick([8_000, 20_000, 70_000])
        if gen.chance(0.02) and request.body is not None:
            headers["Transfer-Encoding"] = "chunked"
        request.headers = headers
        return request


def rest_send(pool: httpcore.ConnectionPool, port: int, request: RestRequest, wait: float) -> tuple[int, bytes]:
    """One request with its target and headers as written (httpx's transport, which does not rewrite `..`)."""
    target = request.target.encode("utf-8", "surrogatepass")
    headers = [(key.encode("latin-1"), value.encode("latin-1", "replace")) for key, value in request.headers.items()]
    if request.body is not None and "Transfer-Encoding" not in request.headers:
        headers.append((b"Content-Length", str(len(request.body)).encode()))
    url = httpcore.URL(scheme=b"http", host=LOOPBACK.encode(), port=port, target=target)
    timeouts = {"connect": 10.0, "read": wait, "write": wait, "pool": wait}
    response = pool.request(
        request.method.encode(), url, headers=headers, content=request.body, extensions={"timeout": timeouts}
    )
    return response.status, response.content


def fuzz_rest(requests: int, seed: int, max_seconds: float) -> dict[str, Any]:
    """`memory serve` with a main token and two per-tenant tokens, hit with `requests` generated requests."""
    sandbox = Sandbox("rest")
    gen = Gen(seed, sandbox)
    fuzzer = RestFuzzer(gen)
    tally = Tally("rest")
    port = free_port()
    env = sandbox.env(
        MEMORY_API_TOKEN=TOKEN, MEMORY_API_TOKENS=",".join(f"{key}={value}" for key, value in TENANT_TOKENS.items())
    )
    server_exit = None
    try:
        with (
            server(["serve", "--host", LOOPBACK, "--port", str(port)], sandbox, env, port, "rest") as process,
            httpcore.ConnectionPool(max_connections=1, retries=0) as pool,
        ):
            deadline = time.monotonic() + max_seconds
            for _ in range(requests):
                if time.monotonic() > deadline or process.poll() is not None:
                    tally.add("stopped_early")
                    break
                request = fuzzer.next()
                rest_one(pool, port, request, tally)
            server_exit = process.poll()
    finally:
        report = tally.report(sandbox, {"server_exit": server_exit, "memories_known_at_end": len(gen.known)})
        sandbox.remove()
    return report


def rest_one(pool: httpcore.ConnectionPool, port: int, request: RestRequest, tally: Tally) -> None:
    tally.add("requests")
    try:
        try:
            status, raw = rest_send(pool, port, request, patience(tally))
        except (httpcore.NetworkError, httpcore.RemoteProtocolError):
            # a kept-alive connection the server closed after an earlier answer: once more on a new one
            tally.add("resent_on_a_new_connection")
            status, raw = rest_send(pool, port, request, patience(tally))
    except (httpcore.LocalProtocolError, UnicodeEncodeError, ValueError) as error:
        tally.add("not_sendable")  # the client itself refused to put it on the wire: not a request
        tally.add("requests", -1)
        tally.example("not_sendable", f"{type(error).__name__} {short(str(error))}: {request.describe()}")
        return
    except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.RemoteProtocolError) as error:
        tally.add("unanswered")
        tally.example("unanswered", f"{type(error).__name__}: {request.describe()}")
        return
    tally.add("answered")
    tally.statuses[str(status)] += 1
    tally.add(f"{status // 100}xx")
    if has_traceback(raw):
        tally.add("tracebacks")
        tally.example("traceback", request.describe())
    if status >= 500:
        tally.example("5xx", f"{status} {short(raw)} <- {request.describe()}")
    payload: Any = None
    if raw and request.method != "HEAD":
        try:
            payload = json.loads(raw)
        except ValueError:
            if status >= 400:
                tally.add("non_json_error_bodies")
                tally.example("non_json_error_body", f"{status} {short(raw)} <- {request.describe()}")
    if request.expect is not None:
        request.expect(status, payload)


# --- MCP: arguments from the tools' own schemas --------------------------------------------------------------


class McpFuzzer:
    """tools/call arguments built from each tool's input schema, valid most of the time, then broken."""

    WEIGHTS: ClassVar[dict[str, float]] = {
        "add_memory": 15, "get_memory": 12, "update_memory": 9, "remove_memory": 3, "move_memory": 5,
        "reinforce_memory": 3, "list_memories": 5, "get_recent_memories": 4, "search_memories": 10,
        "prune_memories": 1, "reindex_store": 0.15, "list_stores": 2, "create_store": 1, "create_category": 2,
        "set_category_description": 2, "delete_category": 1.5, "manage_memory": 9, "search_memory": 6,
    }  # fmt: skip

    def __init__(self, gen: Gen, tools: dict[str, dict[str, Any]]) -> None:
        self.gen = gen
        self.tools = tools

    def value(self, name: str, schema: dict[str, Any]) -> Any:
        gen = self.gen
        if name in ("path_or_id", "id", "from"):
            return gen.ref()
        if name in ("path", "to"):
            return gen.fresh_path() if gen.chance(0.85) else gen.traversal()
        if name in ("content", "query", "description", "source", "instructions"):
            return gen.sentence()
        if name == "namespace":
            return gen.namespace()
        if name == "store":
            return gen.pick(["fuzz-two", "default", gen.nasty_string()[:60]])
        if name == "category":
            return gen.pick(["fuzz", f"fuzz/{gen.word()}"])
        if name in ("tags", "citations"):
            return gen.tags()
        if name == "expires_at":
            return gen.timestamp()
        if name in ("user_id", "org_id", "agent_id"):
            return gen.word()
        if name == "name":
            return f"fuzz-{gen.word()}-{gen.rng.randrange(40)}"
        if name == "filter":
            return gen.pick([{"category": "preference"}, {}, {"colour": "red"}])
        return self.from_schema(schema)

    def from_schema(self, schema: dict[str, Any]) -> Any:
        gen = self.gen
        options = schema.get("anyOf")
        if options:
            real = [option for option in options if option.get("type") != "null"]
            return self.from_schema(gen.pick(real)) if real and gen.chance(0.9) else None
        if "enum" in schema:
            return gen.pick(schema["enum"])
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type")
        if kind == "boolean":
            return gen.pick([True, False])
        if kind == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 50)
            return gen.rng.randint(low, min(high, low + 50))
        if kind == "number":
            return round(gen.rng.uniform(schema.get("minimum", 0), schema.get("maximum", 1)), 3)
        if kind == "array":
            return [self.from_schema(schema.get("items", {"type": "string"})) for _ in range(gen.rng.randint(0, 3))]
        if kind == "object":
            return {}
        return gen.word()

    def call(self) -> tuple[str, Any]:
        """(tool name, arguments) for one tools/call."""
        gen = self.gen
        if gen.chance(0.02):
            return gen.pick(["no_such_tool", "", gen.nasty_string()[:80], "agent_memory.refused"]), {}
        name = gen.weighted({tool: weight for tool, weight in self.WEIGHTS.items() if tool in self.tools})
        schema = self.tools[name]
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        arguments = {
            key: self.value(key, spec)
            for key, spec in properties.items()
            if key in required or gen.chance(0.25 if key != "store" else 0.05)
        }
        if name == "manage_memory" and not {"namespace", "user_id", "org_id"} & set(arguments):
            arguments["user_id"] = gen.pick(["alice", "bob", gen.word()])
        if name == "reindex_store":
            arguments["store"] = gen.pick(["fuzz-two", "missing-store"])
        if gen.chance(0.35):
            return name, self.broken(arguments, list(properties))
        return name, arguments

    def broken(self, arguments: dict[str, Any], fields: list[str]) -> Any:
        gen = self.gen
        if gen.chance(0.06):
            return gen.pick([[], "args", None, 5, [arguments]])
        return gen.mutate_object(arguments, fields or ["x"])


def learn_from_tool(gen: Gen, name: str, arguments: Any, result: dict[str, Any]) -> None:
    if result.get("isError"):
        return
    structured = result.get("structuredContent")
    texts = [item.get("text", "") for item in result.get("content", []) if isinstance(item, dict)]
    if name in ("add_memory", "move_memory", "update_memory") and isinstance(structured, dict):
        if name == "move_memory" and isinstance(arguments, dict):
            gen.forget(str(arguments.get("from")))
        gen.remember(structured)
    elif name == "manage_memory" and texts and texts[0].startswith("created memory "):
        memory_id = texts[0].removeprefix("created memory ").strip()
        gen.known.append({"id": memory_id, "path": memory_id})
    elif name == "remove_memory" and isinstance(arguments, dict):
        gen.forget(str(arguments.get("path_or_id")))


def mcp_answer_counts(tally: Tally, answer: dict[str, Any], describe: str) -> dict[str, Any] | None:
    """Count one JSON-RPC answer: a tool result, a tool error or a protocol error; the result, if any."""
    text = json.dumps(answer, ensure_ascii=False)
    if has_traceback(text):
        tally.add("tracebacks")
        tally.example("traceback", describe)
    if "error" in answer:
        tally.add("rpc_errors")
        if answer["error"].get("code") == -32603:
            tally.add("internal_errors")
            tally.example("internal_error", f"{short(text)} <- {describe}")
        return None
    result = answer.get("result")
    if isinstance(result, dict) and "content" in result:
        tally.add("tool_errors" if result.get("isError") else "tool_results")
        if result.get("isError"):
            first = next((item.get("text", "") for item in result["content"] if isinstance(item, dict)), "")
            tally.codes[first.split(":", 1)[0][:40] if ":" in first else first[:40]] += 1
            if not re.match(r"[A-Z_]+: ", first) and not first.startswith("Unknown tool"):
                tally.add("uncoded_tool_errors")  # the SDK's words for an exception a tool let out
                tally.add("internal_errors")
                tally.example("uncoded_tool_error", f"{short(first)} <- {describe}")
        return result
    tally.add("other_results")
    return result if isinstance(result, dict) else None


INITIALIZE_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "fuzz", "version": "1"},
}


def rpc(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class RpcIds:
    """Unique ids of every JSON type MCP allows (integers, strings with any text)."""

    def __init__(self, gen: Gen) -> None:
        self.gen = gen
        self.n = 100

    def next(self) -> Any:
        self.n += 1
        kind = self.gen.rng.randrange(5)
        if kind == 0:
            return f"s-{self.n}-" + self.gen.pick(["é", "日", "😀", " ", '"', "\\", ""])
        if kind == 1:
            return -self.n
        if kind == 2:
            return 2**53 + self.n
        return self.n


def raw_line(gen: Gen, ids: RpcIds, fuzzer: McpFuzzer) -> tuple[bytes, Any]:
    """A line a broken client writes: (bytes, the id it must be answered with, or None if no answer is owed)."""
    request_id = ids.next()
    name, arguments = fuzzer.call()
    whole = json.dumps(rpc(request_id, "tools/call", {"name": name, "arguments": arguments})).encode()
    kind = gen.rng.randrange(14)
    if kind == 0:  # bad bytes inside a string
        at = whole.find(b'"name": "') + 9
        return whole[:at] + gen.pick([b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80"]) + whole[at:], request_id
    if kind == 1:  # a lone surrogate escape
        escaped = json.dumps(
            rpc(request_id, "tools/call", {"name": "get_memory", "arguments": {"path_or_id": "n/\ud800"}})
        )
        return escaped.encode(), request_id
    if kind == 2:  # nested past the limit
        levels = gen.pick([65, 2000, 20_000])
        params = '{"name": "search_memory", "arguments": {"query": "x", "user_id": "a", "filter": {"a": '
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call", "params": {params}'
        return (head + "[" * levels + "]" * levels + "}}}").encode(), request_id
    if kind == 3:  # not valid JSON-RPC, but a request with an id all the same
        message = rpc(request_id, "tools/call", gen.pick(["str", [], 5, None, {"name": 5}]))
        message.update(gen.pick([{}, {}, {"jsonrpc": "1.0"}, {"jsonrpc": 2}, {"method": 5}]))
        if gen.chance(0.15):
            message.pop("jsonrpc")
        return json.dumps(message).encode(), request_id
    if kind == 4:  # another method, known or not
        method = gen.pick(
            ["ping", "tools/list", "resources/list", "prompts/list", "no/such", "initialize", "", "logging/setLevel"]
        )
        given = gen.pick([None, {}, {"level": "debug"}, {"cursor": gen.nasty_string()[:50]}])
        return json.dumps(rpc(request_id, method, given)).encode(), request_id
    if kind == 5:  # raw UTF-8 (not escaped) with odd characters
        return json.dumps(
            rpc(request_id, "tools/call", {"name": name, "arguments": arguments}), ensure_ascii=False
        ).encode("utf-8", "surrogatepass"), request_id
    if kind == 6:  # a notification: no answer owed
        note: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": gen.pick(["notifications/cancelled", "notifications/progress", "x/y"]),
        }
        note["params"] = {"requestId": gen.number(), "reason": gen.nasty_string()[:50]}
        return json.dumps(note).encode(), None
    # not a request at all, or broken past reading: no id can be trusted, so no answer is owed
    junk = gen.pick(
        [b"not json", b"{", b"[]", b"{}", b"null", b'{"jsonrpc": "2.0"}', whole[: len(whole) // 2], whole + b"}",
         b"[" + whole + b"," + whole + b"]", b"\x00\x01\x02", b"\xef\xbb\xbf" + whole, b"   "]
    )  # fmt: skip
    return junk, None


# --- MCP over stdio ------------------------------------------------------------------------------------------------


class StdioClient:
    """`memory mcp` over stdio: raw lines written, answers read by a thread and matched by id."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.log = (sandbox.logs / "mcp-stdio.log").open("wb")
        self.process = subprocess.Popen(
            [str(MEMORY), "mcp"],
            env=sandbox.env(),
            cwd=sandbox.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.answers: queue.Queue[Any] = queue.Queue()
        self.unreadable = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.answers.put(json.loads(line))
            except ValueError:
                self.unreadable += 1
                self.answers.put({"unreadable": line.decode(errors="replace")})

    def send(self, line: bytes) -> bool:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line.replace(b"\n", b" ") + b"\n")
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def wait_for(self, request_id: Any, timeout: float, stray: Callable[[Any], None]) -> dict[str, Any] | None:
        """The answer with this id; other messages go to `stray`. None if none came within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                message = self.answers.get(timeout=min(left, 1.0))
            except queue.Empty:
                if self.process.poll() is not None:
                    return None
                continue
            if (
                isinstance(message, dict)
                and "id" in message
                and message["id"] == request_id
                and "method" not in message
            ):
                return message
            stray(message)

    def close(self) -> int | None:
        died = self.process.poll()
        with suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        self.log.close()
        return died


def fuzz_mcp_stdio(requests: int, seed: int, max_seconds: float) -> dict[str, Any]:
    sandbox = Sandbox("mcp-stdio")
    gen = Gen(seed, sandbox)
    tally = Tally("mcp-stdio")
    ids = RpcIds(gen)
    client = StdioClient(sandbox)
    server_exit = None

    def stray(message: Any) -> None:
        if isinstance(message, dict) and "unreadable" in message:
            tally.add("unreadable_output_lines")
            tally.example("unreadable_output", short(message["unreadable"]))
        elif isinstance(message, dict) and "method" in message:
            tally.add("server_messages")  # notifications or requests from the server
        else:
            tally.add("answers_to_unowed_lines")
        if has_traceback(json.dumps(message)):
            tally.add("tracebacks")
            tally.example("traceback", short(message))

    try:
        client.send(json.dumps(rpc(1, "initialize", INITIALIZE_PARAMS)).encode())
        if client.wait_for(1, START_TIMEOUT, stray) is None:
            raise RuntimeError("`memory mcp` did not answer initialize")
        client.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        client.send(json.dumps(rpc(2, "tools/list")).encode())
        listed = client.wait_for(2, REQUEST_TIMEOUT, stray)
        tools = {tool["name"]: tool["inputSchema"] for tool in (listed or {})["result"]["tools"]}
        fuzzer = McpFuzzer(gen, tools)
        deadline = time.monotonic() + max_seconds
        for _ in range(2 * requests):  # `requests` requests owed an answer, among lines that owe none
            if tally.counts["requests"] >= requests:
                break
            if time.monotonic() > deadline or client.process.poll() is not None:
                tally.add("stopped_early")
                break
            stdio_one(client, gen, ids, fuzzer, tally, stray)
    finally:
        server_exit = client.close()
        report = tally.report(sandbox, {"server_exit": server_exit, "memories_known_at_end": len(gen.known)})
        sandbox.remove()
    return report


def stdio_one(
    client: StdioClient, gen: Gen, ids: RpcIds, fuzzer: McpFuzzer, tally: Tally, stray: Callable[[Any], None]
) -> None:
    if gen.chance(0.15):
        line, owed = raw_line(gen, ids, fuzzer)
        name, arguments = "", None
    else:
        owed = ids.next()
        name, arguments = fuzzer.call()
        line = json.dumps(rpc(owed, "tools/call", {"name": name, "arguments": arguments})).encode()
    describe = short(line.decode("utf-8", "replace"))
    if owed is None:
        tally.add("unowed_lines")  # no answer is owed (notifications, junk); the next request checks the server lives
        client.send(line)
        return
    tally.add("requests")
    if not client.send(line):
        tally.add("unanswered")
        tally.example("unanswered", f"write failed: {describe}")
        return
    answer = client.wait_for(owed, patience(tally), stray)
    if answer is None:
        tally.add("unanswered")
        tally.example("unanswered", describe)
        return
    tally.add("answered")
    result = mcp_answer_counts(tally, answer, describe)
    if result is not None and name:
        learn_from_tool(gen, name, arguments, result)


# --- MCP over HTTP ---------------------------------------------------------------------------------------------


def sse_messages(response: httpx.Response) -> list[Any]:
    """The JSON-RPC messages of a response: a JSON body, or the `data:` lines of a server-sent event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        found = []
        for line in re.split(r"\r\n|\r|\n", response.text):  # SSE lines; not str.splitlines (U+2028 is text)
            if line.startswith("data:"):
                with suppress(ValueError):
                    found.append(json.loads(line[5:]))
        return found
    try:
        return [response.json()]
    except ValueError:
        return []


class HttpMcp:
    """One MCP session over streamable HTTP, spoken as raw JSON-RPC POSTs with httpx."""

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client = client
        self.url = url
        self.session = ""

    def base_headers(self, token: str = TOKEN) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2025-06-18",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return headers

    def open(self) -> None:
        self.session = ""
        response = self.client.post(self.url, json=rpc(1, "initialize", INITIALIZE_PARAMS), headers=self.base_headers())
        response.raise_for_status()
        self.session = response.headers["mcp-session-id"]
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.client.post(self.url, json=note, headers=self.base_headers()).raise_for_status()


def fuzz_mcp_http(requests: int, seed: int, max_seconds: float) -> dict[str, Any]:
    sandbox = Sandbox("mcp-http")
    gen = Gen(seed, sandbox)
    tally = Tally("mcp-http")
    ids = RpcIds(gen)
    port = free_port()
    url = f"http://{LOOPBACK}:{port}/mcp"
    env = sandbox.env(
        MEMORY_API_TOKEN=TOKEN, MEMORY_API_TOKENS=",".join(f"{key}={value}" for key, value in TENANT_TOKENS.items())
    )
    server_exit = None
    try:
        argv = ["mcp", "--transport", "http", "--host", LOOPBACK, "--port", str(port)]
        with (
            server(argv, sandbox, env, port, "mcp-http") as process,
            httpx.Client(timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=10.0)) as client,
        ):
            mcp = HttpMcp(client, url)
            mcp.open()
            listed = client.post(url, json=rpc(2, "tools/list"), headers=mcp.base_headers())
            tools = {tool["name"]: tool["inputSchema"] for tool in sse_messages(listed)[0]["result"]["tools"]}
            fuzzer = McpFuzzer(gen, tools)
            deadline = time.monotonic() + max_seconds
            for _ in range(requests):
                if time.monotonic() > deadline or process.poll() is not None:
                    tally.add("stopped_early")
                    break
                http_one(mcp, gen, ids, fuzzer, tally)
            server_exit = process.poll()
    finally:
        report = tally.report(sandbox, {"server_exit": server_exit, "memories_known_at_end": len(gen.known)})
        sandbox.remove()
    return report


def http_one(mcp: HttpMcp, gen: Gen, ids: RpcIds, fuzzer: McpFuzzer, tally: Tally) -> None:
    headers = mcp.base_headers(gen.pick([TOKEN] * 6 + list(TENANT_TOKENS)))
    method = "POST"
    name, arguments = "", None
    if gen.chance(0.15):
        body, owed = raw_line(gen, ids, fuzzer)
    else:
        owed = ids.next()
        name, arguments = fuzzer.call()
        body = json.dumps(rpc(owed, "tools/call", {"name": name, "arguments": arguments})).encode()
    proper = True  # a request the server can answer with a JSON-RPC message (a good session and headers)
    if gen.chance(0.15):
        proper = False
        kind = gen.rng.randrange(9)
        if kind == 0:
            headers["Authorization"] = gen.pick(["Bearer wrong", "Bearer", "Basic eDp5", "Bearer " + "t" * 10_000])
        elif kind == 1:
            headers["Host"] = gen.pick(["attacker.example", "localhost.evil", "h" * 300, "127.0.0.1:abc"])
        elif kind == 2:
            headers["Origin"] = gen.pick(["http://evil.example", "null", "file://", "http://localhost.evil"])
        elif kind == 3:
            headers["Content-Type"] = gen.pick(
                ["text/plain", "application/x-www-form-urlencoded", "", "application/jsonx"]
            )
        elif kind == 4:
            headers["Mcp-Session-Id"] = gen.pick(["", "bogus", uuid.uuid4().hex, "s" * 5000, "a b"])
        elif kind == 5:
            headers.pop("Mcp-Session-Id", None)
        elif kind == 6:
            headers["Accept"] = gen.pick(["text/html", "", "application/json", "*/*"])
            proper = headers["Accept"] in ("application/json", "*/*")
        elif kind == 7:
            headers["MCP-Protocol-Version"] = gen.pick(["1999-01-01", "", "x" * 300])
        else:
            method = gen.pick(["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
            headers["Mcp-Session-Id"] = "not-the-session"  # never end our own session
    describe = f"{method} {headers.get('Host', '')} {short(body.decode('utf-8', 'replace'))}"
    tally.add("requests")
    try:
        if method == "GET":
            with mcp.client.stream("GET", mcp.url, headers={**headers, "Accept": "text/event-stream"}) as response:
                status, messages, text = response.status_code, [], ""
        else:
            try:
                response = mcp.client.request(method, mcp.url, content=body, headers=headers, timeout=patience(tally))
            except (httpx.NetworkError, httpx.RemoteProtocolError):
                tally.add("resent_on_a_new_connection")  # a kept-alive connection closed after an earlier answer
                response = mcp.client.request(method, mcp.url, content=body, headers=headers, timeout=patience(tally))
            status, messages, text = response.status_code, sse_messages(response), response.text
    except httpx.TimeoutException as error:
        tally.add("unanswered")
        tally.example("unanswered", f"{type(error).__name__}: {describe}")
        return
    except (httpx.LocalProtocolError, UnicodeEncodeError) as error:
        tally.add("requests", -1)
        tally.add("not_sendable")
        tally.example("not_sendable", f"{type(error).__name__}: {describe}")
        return
    except httpx.TransportError as error:
        tally.add("unanswered")
        tally.example("unanswered", f"{type(error).__name__}: {describe}")
        return
    tally.add("answered")
    tally.statuses[str(status)] += 1
    tally.add(f"{status // 100}xx")
    if has_traceback(text):
        tally.add("tracebacks")
        tally.example("traceback", describe)
    if status >= 500:
        tally.example("5xx", f"{status} {short(text)} <- {describe}")
    if status >= 400 and method != "GET" and not messages and text:
        tally.add("non_json_error_bodies")
        tally.example("non_json_error_body", f"{status} {short(text)} <- {describe}")
    if status == 404 and headers.get("Mcp-Session-Id") == mcp.session and mcp.session:
        mcp.open()  # our session is gone (it should not be): count it and carry on with a new one
        tally.add("sessions_lost")
    if owed is None or not proper or status != 200:
        return
    answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == owed and "method" not in m), None)
    if answer is None:
        tally.add("unanswered")  # 200 but no JSON-RPC answer to the request
        tally.example("unanswered", f"200 without an answer: {short(text)} <- {describe}")
        return
    tally.add("rpc_answers")
    result = mcp_answer_counts(tally, answer, describe)
    if result is not None and name:
        learn_from_tool(gen, name, arguments, result)


# --- the CLI -------------------------------------------------------------------------------------------------------


class CliFuzzer:
    """argv and stdin for one `memory` process; never --data-dir or --output (they write where they are told)."""

    def __init__(self, gen: Gen) -> None:
        self.gen = gen

    def arg(self) -> bytes:
        gen = self.gen
        if gen.chance(0.08):
            return gen.pick([b"\xff\xfe", b"caf\xe9", b"\xed\xa0\x80", b"x\x80y"])  # not UTF-8
        text = gen.nasty_string() if gen.chance(0.25) else gen.sentence()
        return text.replace("\x00", "")[:50_000].encode("utf-8", "surrogatepass")

    def ref(self) -> bytes:
        return self.gen.ref().replace("\x00", "").encode("utf-8", "surrogatepass")

    def next(self) -> tuple[list[bytes], bytes]:
        gen = self.gen
        command = gen.weighted(
            {
                "create": 12, "add": 8, "get": 8, "update": 6, "delete": 3, "remove": 2, "reinforce": 2, "move": 3,
                "search": 10, "list": 4, "recent": 3, "store": 3, "category": 4, "status": 1, "export": 1,
                "import": 3, "jsonl": 3, "prune": 1, "mcp": 1, "serve": 1, "unknown": 3, "version": 1,
            }
        )  # fmt: skip
        stdin = b""
        args: list[bytes]
        if command == "create":
            args = [b"create", b"-" if gen.chance(0.2) else self.arg()]
            stdin = self.arg()
            args += self.options(["--agent", "--project", "--type", "--tag", "--citation", "--decay", "--namespace",
                                  "--expires-at", "--thread", "--source", "--global"])  # fmt: skip
        elif command == "add":
            path = gen.fresh_path() if gen.chance(0.7) else gen.traversal().replace("\x00", "")
            args = [b"add", path.encode("utf-8", "surrogatepass"), b"--content", self.arg()]
            args += self.options(["--tag", "--decay", "--expires-at"])
        elif command in ("get", "delete", "remove", "reinforce"):
            args = [command.encode(), self.ref()]
        elif command == "update":
            args = [
                b"update",
                self.ref(),
                *self.options(["--content", "--tag", "--decay", "--clear-tags", "--expires-at"]),
            ]
        elif command == "move":
            args = [
                b"move",
                self.ref(),
                gen.pick([gen.fresh_path(), gen.traversal().replace("\x00", "")]).encode("utf-8", "surrogatepass"),
            ]
        elif command == "search":
            args = [
                b"search",
                self.arg(),
                *self.options(["--limit", "--mode", "--min-confidence", "--namespace", "--tag", "--category"]),
            ]
        elif command == "list":
            args = [b"list", *([self.arg()] if gen.chance(0.6) else [])]
        elif command == "recent":
            args = [b"recent", b"--limit", gen.pick([b"5", b"0", b"101", b"-1", b"x", b"99999999999999999999"])]
        elif command == "store":
            args = [b"store", gen.pick([b"list", b"create", b"drop"]), *([self.arg()] if gen.chance(0.6) else [])]
        elif command == "category":
            args = [b"category", gen.pick([b"create", b"describe", b"delete", b"rename"]), self.arg()]
            args += [self.arg()] if gen.chance(0.4) else []
        elif command in ("status", "prune"):
            args = [command.encode(), *([b"--dry-run"] if command == "prune" else [])]
        elif command == "export":
            args = [b"export", *([b"--store", self.arg()] if gen.chance(0.3) else [])]
        elif command in ("import", "jsonl"):
            args = [b"import", b"-"] if command == "import" else [b"create", b"--jsonl", b"-"]
            stdin = self.jsonl()
        elif command == "mcp":
            args = [b"mcp", *gen.pick([[], [b"--transport", b"carrier-pigeon"], [b"--port", b"eighty"]])]
            stdin = b"not json\n" + json.dumps(rpc(1, "ping")).encode() + b"\n"
        elif command == "serve":
            args = [b"serve", b"--host", gen.pick([b"0.0.0.0", b"::", b"example.com"])]  # refused without a token
        elif command == "version":
            args = [gen.pick([b"--version", b"--help", b"create", b"--format", b"--format=xml"])]
        else:
            args = [self.arg(), *([self.arg()] if gen.chance(0.5) else [])]
        if gen.chance(0.15):
            args += [gen.pick([b"--format", b"--store", b"--backend", b"--bogus", b"--format=text", b"--"]), self.arg()]
        return args, stdin

    def options(self, names: list[str]) -> list[bytes]:
        gen = self.gen
        chosen: list[bytes] = []
        for name in names:
            if not gen.chance(0.25):
                continue
            chosen.append(name.encode())
            if name in ("--global", "--clear-tags"):
                continue
            value = {
                "--decay": gen.pick([b"stable", b"contextual", b"reinforceable", b"forever"]),
                "--mode": gen.pick([b"hybrid", b"keyword", b"fuzzy"]),
                "--limit": gen.pick([b"5", b"0", b"-3", b"x", b"1001"]),
                "--min-confidence": gen.pick([b"0.3", b"2", b"nan", b"-inf"]),
                "--expires-at": gen.pick(
                    [b"2099-01-01T00:00:00Z", b"tomorrow", b"2026-13-45", b"0001-01-01T00:00:00+14:00"]
                ),
                "--namespace": gen.pick([b"user/alice", b"", b"/", b"user//x", b"a/" * 30]),
            }.get(name) or self.arg()
            chosen.append(value)
        return chosen

    def jsonl(self) -> bytes:
        gen = self.gen
        lines = []
        for _ in range(gen.rng.randint(1, 6)):
            record: Any = {"content": gen.sentence(), "path": gen.fresh_path()}
            if gen.chance(0.5):
                record = gen.mutate_object(record, ["content", "path", "id", "namespace", "store", "tags"])
            lines.append(gen.encode(record))
        return b"\n".join(lines) + gen.pick([b"\n", b"", b"\n\n", b"\r\n"])


def fuzz_cli(requests: int, seed: int, max_seconds: float) -> dict[str, Any]:
    sandbox = Sandbox("cli")
    gen = Gen(seed, sandbox)
    tally = Tally("cli")
    fuzzer = CliFuzzer(gen)
    exit_codes: Counter[str] = Counter()
    env = sandbox.env()
    deadline = time.monotonic() + max_seconds
    try:
        for _ in range(requests):
            if time.monotonic() > deadline:
                tally.add("stopped_early")
                break
            args, stdin = fuzzer.next()
            args = [arg.replace(b"\x00", b"")[:100_000] for arg in args]  # the kernel's limits on one argument
            describe = short(b" ".join(args).decode("utf-8", "replace"))
            tally.add("requests")
            try:
                done = subprocess.run(
                    [bytes(MEMORY), *args], input=stdin, capture_output=True, env=env, cwd=sandbox.cwd,
                    timeout=REQUEST_TIMEOUT, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                tally.add("unanswered")
                tally.example("unanswered", describe)
                continue
            except (OSError, ValueError) as error:
                tally.add("requests", -1)
                tally.add("not_sendable")
                tally.example("not_sendable", f"{type(error).__name__} {short(str(error))}: {describe}")
                continue
            tally.add("answered")
            exit_codes[str(done.returncode)] += 1
            if has_traceback(done.stderr) or has_traceback(done.stdout):
                tally.add("tracebacks")
                tally.example("traceback", f"{describe}: {short(done.stderr[-600:].decode(errors='replace'))}")
            if done.returncode not in (0, 1):
                tally.example(f"exit_{done.returncode}", describe)
            if b'"code": "INTERNAL_ERROR"' in done.stderr:
                tally.add("internal_errors")  # an exception the CLI caught last: a bug, even without a traceback
                tally.example("internal_error", f"{describe}: {short(done.stderr.decode(errors='replace'))}")
            if done.returncode == 1 and not json_lines(done.stderr):
                tally.add("non_json_errors")
                tally.example("non_json_error", f"{describe}: {short(done.stderr.decode(errors='replace'))}")
            if done.returncode == 0 and args[0] in (b"create", b"add", b"move") and b"--jsonl" not in args:
                with suppress(ValueError):
                    gen.remember(json.loads(done.stdout))
    finally:
        report = tally.report(
            sandbox, {"exit_codes": dict(sorted(exit_codes.items())), "memories_known_at_end": len(gen.known)}
        )
        sandbox.remove()
    return report


def json_lines(raw: bytes) -> bool:
    """Whether every non-empty line is a JSON object (the CLI's errors are one per line)."""
    lines = [line for line in raw.splitlines() if line.strip()]
    try:
        return bool(lines) and all(isinstance(json.loads(line), dict) for line in lines)
    except ValueError:
        return False


# --- running ---------------------------------------------------------------------------------------------------

FUZZERS: dict[str, Callable[[int, int, float], dict[str, Any]]] = {
    "rest": fuzz_rest,
    "mcp-stdio": fuzz_mcp_stdio,
    "mcp-http": fuzz_mcp_http,
    "cli": fuzz_cli,
}


def run(doors: list[str], requests: dict[str, int], seed: int, max_seconds: float, jobs: int = 1) -> dict[str, Any]:
    """Fuzz each door (in `jobs` processes at once); the doors' reports and whether all of them are clean."""
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {door: pool.submit(FUZZERS[door], requests[door], seed, max_seconds) for door in doors}
            results = {door: future.result() for door, future in futures.items()}
    else:
        results = {door: FUZZERS[door](requests[door], seed, max_seconds) for door in doors}
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.system()},
        "seed": seed,
        "jobs": jobs,
        "doors": results,
        "ok": all(result["ok"] for result in results.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--door", choices=[*DOORS, "all"], default="all")
    parser.add_argument(
        "--requests",
        type=int,
        default=10_000,
        help="requests per door (default 10,000; with --door all the CLI takes --cli-requests)",
    )
    parser.add_argument(
        "--cli-requests", type=int, default=300, help="with --door all, invocations of the CLI (~1 s each; default 300)"
    )
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--max-seconds", type=float, default=3600, help="stop a door after this long (default 3600)")
    parser.add_argument("--jobs", type=int, default=1, help="doors fuzzed at once, each in its own process")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    doors = list(DOORS) if args.door == "all" else [args.door]
    sizes = {door: args.requests for door in DOORS}
    if args.door == "all":
        sizes["cli"] = args.cli_requests
    report = run(doors, sizes, args.seed, args.max_seconds, args.jobs)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
