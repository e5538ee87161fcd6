"""Every door under generated nasty requests (bench/fuzz.py at a bounded size): no traceback, 5xx, silence or stray file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.server]

FUZZ = Path(__file__).resolve().parents[2] / "bench" / "fuzz.py"
# the full size (≥ 10,000 per server door) is in BENCHMARKS.md; CI runs this many, with the same generator
SIZES = {"rest": 300, "mcp-stdio": 300, "mcp-http": 200, "cli": 20}
SEED = 12
BOUND = 1200.0  # seconds a door may run before the fuzzer stops it: a guard against a hang, not a timing


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    """bench/ is not a package: the fuzzer is loaded from its file."""
    spec = importlib.util.spec_from_file_location("agent_memory_bench_fuzz", FUZZ)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("door", list(SIZES))
def test_a_door_answers_every_generated_request_without_a_crash(fuzz: ModuleType, door: str) -> None:
    report = fuzz.FUZZERS[door](SIZES[door], SEED, BOUND)
    assert report["requests"] > 0
    assert report["tracebacks"] == 0, report["examples"]
    assert report["unanswered"] == 0, report["examples"]
    assert report.get("5xx", 0) == 0, report["examples"]
    assert report.get("internal_errors", 0) == 0, report["examples"]
    assert report["files_outside_data_dir"] == 0, report["stray_files"]
    assert report.get("server_exit") is None
    assert report["answered"] == report["requests"]
    assert report["ok"], report
