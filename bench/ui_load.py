"""The web page's first load: from navigating to /ui to a rendered memory list, with 1,000 memories in the store.

    python bench/ui_load.py [--backend chroma] [--memories 1000] [--runs 5] [--out FILE]

Starts `memory serve` (the installed `memory` beside this Python) on a free loopback port over a fresh data
directory, stores the memories through the REST API (10 categories, realistic sentences), then loads the page
`--runs` times in Debian's headless Chromium (driven by Playwright, launched once), each time in a new browser
context (empty cache, no session): the token is put in sessionStorage before the page's script runs, as after
giving it once. Times are read from the page's own clock (navigation start = 0): `list_ms` when the 20 newest
memories are on screen (GET /memories answered and drawn: the first load's figure), `ready_ms` when the store
list with its counts is drawn too (GET /stores, asked for after the list); `wall_ms` is the driver's
goto-to-ready time. Prints JSON with every run and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

MEMORY = Path(sys.executable).parent / "memory"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOKEN = "bench-token"
CATEGORIES = (
    "preferences",
    "projects/alpha",
    "projects/beta",
    "people",
    "decisions",
    "facts",
    "notes/daily",
    "notes/meetings",
    "tools",
    "places",
)
SUBJECTS = (
    "the editor",
    "deploys",
    "the database",
    "code review",
    "coffee",
    "the manager",
    "backups",
    "tests",
    "the release",
    "the API",
)
VERBS = ("prefers", "decided on", "noted", "asked about", "changed", "reviewed", "planned", "measured")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sentence(n: int) -> str:
    return (
        f"Memory {n}: the user {VERBS[n % len(VERBS)]} {SUBJECTS[n % len(SUBJECTS)]} "
        f"on day {n % 31 + 1}, with detail {n * 7919 % 10007} for later."
    )


def wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"`memory serve` exited with {process.returncode}")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("`memory serve` did not become healthy")


def seed(base: str, count: int) -> float:
    started = time.perf_counter()
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client:
        for n in range(count):
            category = CATEGORIES[n % len(CATEGORIES)]
            body = {"content": sentence(n), "path": f"{category}/memory-{n:04d}", "tags": [f"t{n % 5}"], "type": "fact"}
            made = client.post("/memories", json=body)
            if made.status_code != 201:
                raise SystemExit(f"seeding failed: {made.status_code} {made.text}")
    return time.perf_counter() - started


def loads(base: str, runs: int) -> list[dict[str, float]]:
    measured = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                context.add_init_script(f"sessionStorage.setItem('agent-memory-token', {json.dumps(TOKEN)})")
                page = context.new_page()
                began = time.perf_counter()
                page.goto(f"{base}/ui")
                page.wait_for_selector("body[data-ready=browse]", timeout=60_000)
                wall_ms = (time.perf_counter() - began) * 1000
                list_ms = page.evaluate("performance.getEntriesByName('memory-list-rendered').pop().startTime")
                page_ms = page.evaluate("performance.getEntriesByName('ready-browse').pop().startTime")
                shown = page.locator("#memory-list > li").count()
                if shown != 20:
                    raise SystemExit(f"the page listed {shown} memories, not 20")
                measured.append(
                    {"list_ms": round(list_ms, 1), "ready_ms": round(page_ms, 1), "wall_ms": round(wall_ms, 1)}
                )
                context.close()
        finally:
            browser.close()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="chroma", choices=("chroma", "files", "qdrant"))
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        port = free_port()
        config = Path(home) / "empty-config.toml"
        config.touch()  # no user config: the defaults and the variables below
        base = f"http://127.0.0.1:{port}"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "MEMORY_CONFIG": str(config),
            "MEMORY_DATA_DIR": str(Path(home) / "data"),
            "MEMORY_BACKEND": args.backend,
            "MEMORY_API_TOKEN": TOKEN,
            "ANONYMIZED_TELEMETRY": "False",
        }
        with open(Path(home) / "server.log", "wb") as log:
            process = subprocess.Popen([str(MEMORY), "serve", "--port", str(port)], env=env, stdout=log, stderr=log)
            try:
                wait_healthy(base, process)
                seed_s = seed(base, args.memories)
                runs = loads(base, args.runs)
            finally:
                process.terminate()
                process.wait(timeout=30)
    result: dict[str, Any] = {
        "bench": "ui_load",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "backend": args.backend,
        "memories": args.memories,
        "seed_s": round(seed_s, 1),
        "runs": runs,
        "median_list_ms": round(statistics.median(r["list_ms"] for r in runs), 1),
        "median_ready_ms": round(statistics.median(r["ready_ms"] for r in runs), 1),
        "median_wall_ms": round(statistics.median(r["wall_ms"] for r in runs), 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
