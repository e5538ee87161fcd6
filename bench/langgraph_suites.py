"""LangGraph's own store suites (checkpoint-sqlite's tests/test_store.py, test_async_store.py and test_ttl.py) run
against `MemoryStore` with only the store swapped: every test's SqliteStore is a MemoryStore, every AsyncSqliteStore
an AsyncMemoryStore, over a fresh data directory of the chosen backend (closed when the test's `with` ends). Prints one JSON object per backend: passed, failed, the failed tests.

Needs a checkout of the langgraph repository (its tests are not packaged), `langgraph-checkpoint-sqlite` (the
sqlite-internal helpers some tests import) and `pytest-asyncio` (the async suite's tests are coroutines):

    pip install langgraph-checkpoint-sqlite pytest-asyncio
    python bench/langgraph_suites.py --checkout ../langgraph --backend files chroma qdrant
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SUITES = ("test_store.py", "test_async_store.py", "test_ttl.py")

SWAP = '''"""The swapped store: a MemoryStore over a fresh data directory per store, as SqliteStore's API opens one."""

import atexit
import os
import shutil
import tempfile
from contextlib import asynccontextmanager, contextmanager

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from agent_memory.langgraph import AsyncMemoryStore, MemoryStore

_made = []
atexit.register(lambda: [shutil.rmtree(path, ignore_errors=True) for path in _made])


def _service():
    home = tempfile.mkdtemp(prefix="langgraph-suite-")
    _made.append(home)
    flags = {"data_dir": os.path.join(home, "data"), "backend": os.environ["SUITE_BACKEND"]}
    embedder = HashingEmbedder() if os.environ.get("SUITE_EMBEDDER") == "hashing" else None
    return build_service(load_settings(flags, {"HOME": home}).unwrap(), embedder=embedder).unwrap()


class _Store(MemoryStore):
    def setup(self):
        return None


class _AsyncStore(AsyncMemoryStore):
    async def setup(self):
        return None


class SqliteStore:
    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_ignored):
        with _Store(_service(), index=index, ttl=ttl) as store:
            yield store


class AsyncSqliteStore:
    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string, *, index=None, ttl=None, **_ignored):
        async with _AsyncStore(_service(), index=index, ttl=ttl) as store:
            yield store
'''

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


def prepared(checkout: Path, into: Path) -> Path:
    """A `tests` package holding the suites with their sqlite stores swapped for MemoryStore."""
    source = checkout / "libs" / "checkpoint-sqlite" / "tests"
    package = into / "tests"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_swap.py").write_text(SWAP)
    (into / "pytest.ini").write_text(INI)
    for name in SUITES:
        text = (source / name).read_text()
        text = re.sub(
            r"^from langgraph\.store\.sqlite(?:\.aio)? import (\w+)$",
            r"from tests._swap import \1",
            text,
            flags=re.MULTILINE,
        )
        (package / name).write_text(text)
    return into


def run(root: Path, backend: str, embedder: str) -> dict[str, object]:
    report = root / f"report-{backend}.xml"
    env = {**os.environ, "SUITE_BACKEND": backend, "SUITE_EMBEDDER": embedder}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "tests"]
    subprocess.run(command, cwd=root, env=env, check=False, capture_output=True)
    passed: dict[str, int] = {}
    failed: list[str] = []
    for case in ET.parse(report).getroot().iter("testcase"):
        suite = str(case.get("classname")).removeprefix("tests.")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{suite}::{case.get('name')}")
        elif case.find("skipped") is None:
            passed[suite] = passed.get(suite, 0) + 1
    return {"backend": backend, "embedder": embedder, "passed": passed, "failed": len(failed), "failures": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, required=True, help="a checkout of the langgraph repository")
    parser.add_argument("--backend", nargs="+", default=["files", "chroma", "qdrant"])
    parser.add_argument("--embedder", choices=["shipped", "hashing"], default="shipped")
    arguments = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="langgraph-suites-"))
    try:
        prepared(arguments.checkout, root)
        for backend in arguments.backend:
            print(json.dumps(run(root, backend, arguments.embedder)), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
