"""Schemathesis' positive-data conformance run against a real `memory serve`: schema-valid requests refused, wrong Allow.

    python bench/schemathesis_run.py [--examples 20] [--seed 1] [--checks all] [--token T] [--out FILE] [--log FILE]

Starts `memory serve` (embedded Chroma, no token) in a fresh sandbox (HOME, MEMORY_CONFIG and MEMORY_DATA_DIR under
a temporary directory) on a free loopback port, then runs the installed `schemathesis` command against its
/openapi.json: positive data only (requests the document says are valid), the examples, coverage and fuzzing
phases, at most `--examples` cases per operation, one worker, a fixed seed, and `--checks` (all of Schemathesis'
checks by default: among them not_a_server_error, positive_data_acceptance (a schema-valid request must not be
refused with 400/422), status_code_conformance (no undocumented status), response_schema_conformance,
allow_header_conformance (OPTIONS lists exactly the documented methods); `--checks issue-42` runs the four of
issue 42's run). Prints JSON: the requests generated, the failures by check, and Schemathesis' exit code; the
server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
CHECKS = {"issue-42": "positive_data_acceptance,allow_header_conformance,unsupported_method,not_a_server_error"}
START_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def serve(home: Path, port: int, token: str | None = None) -> subprocess.Popen[bytes]:
    config = home / "empty-config.toml"
    config.touch()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": str(config),
        "MEMORY_DATA_DIR": str(home / "data"),
        "ANONYMIZED_TELEMETRY": "False",
        **({} if token is None else {"MEMORY_API_TOKEN": token}),
    }
    log = (home / "server.log").open("wb")
    process = subprocess.Popen([str(BIN / "memory"), "serve", "--port", str(port)], env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"memory serve did not start:\n{(home / 'server.log').read_text()}")


def counts(output: str) -> dict[str, Any]:
    """The summary Schemathesis prints: cases generated and passed, and each failure kind's count."""
    generated = re.search(r"(\d+) generated", output)
    failures = dict(re.findall(r"❌ (\S+ [^:\n]+): (\d+)", output))
    return {
        "requests": int(generated.group(1)) if generated else None,
        "failures": {name: int(count) for name, count in failures.items()},
        "passed": "passed" in output.rsplit("Test cases:", 1)[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20, help="most cases per operation")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--checks", default="all", help="Schemathesis' --checks, or issue-42 for that run's four")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--token", help="serve with this API token and send it (ignored_auth then checks the guard)")
    parser.add_argument("--log", type=Path, help="where to write Schemathesis' own report")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home, port = Path(folder), free_port()
        process = serve(home, port, args.token)
        started = time.monotonic()
        try:
            run = subprocess.run(
                [
                    str(BIN / "schemathesis"), "run", f"http://127.0.0.1:{port}/openapi.json",
                    "--mode", "positive", "--phases", "examples,coverage,fuzzing", "--checks", CHECKS.get(args.checks, args.checks),
                    "-n", str(args.examples), "--seed", str(args.seed), "--workers", "1",
                    *([] if args.token is None else ["-H", f"Authorization: Bearer {args.token}"]),
                ],
                capture_output=True, text=True, check=False, cwd=folder,  # its cache stays in the sandbox
            )  # fmt: skip
        finally:
            process.terminate()
            process.wait(timeout=60)
    result = {
        "bench": "schemathesis_run",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "examples_per_operation": args.examples,
        "seed": args.seed,
        "checks": args.checks,
        "token": args.token is not None,
        "exit_code": run.returncode,
        "seconds": round(time.monotonic() - started, 1),
        **counts(run.stdout),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if run.returncode != 0:
        print(run.stdout[-4000:], file=sys.stderr)
    if args.out:
        args.out.write_text(text + "\n")
    if args.log:
        args.log.write_text(run.stdout)


if __name__ == "__main__":
    main()
