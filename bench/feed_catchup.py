"""What a fed side index's catch-up costs a warm search when nothing changed, against a Chroma server.

    python bench/feed_catchup.py --chroma-host HOST [--chroma-port PORT] [--memories 1000] [--searches 200]

One node over a Chroma server (a new collection; its keyword index and parts fed from the server's change feed)
stores `--memories` LoCoMo-like texts with the default embedder, then runs hybrid searches alternately through
that service and through a second service over the same catalog, embedder and *the same local SQLite files*
without the feed (the search as it was before: no catch-up). Reports the median and p95 of each, their
difference, and the median of one catch-up call alone (one read of two keys in the ledger). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

from agent_memory.adapters.feeds.keywords import FedKeywordIndex
from agent_memory.adapters.feeds.parts import FedPartVectors
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.entrypoints.bootstrap import build_catalog, build_embedder, build_keywords, build_parts, build_service
from agent_memory.entrypoints.settings import load_settings

TOPICS = ["train to Lyon", "dentist appointment", "the blue flowerpot", "quarterly budget", "piano lessons"]
QUERIES = ["when is the dentist", "budget review", "where is the spare key", "piano teacher", "train booking"]


def percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chroma-host", required=True)
    parser.add_argument("--chroma-port", type=int, default=8000)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        flags = {
            "data_dir": home,
            "chroma_host": args.chroma_host,
            "chroma_port": str(args.chroma_port),
            "collection": f"catchup{int(time.time())}",
        }
        settings = load_settings(flags, {"HOME": home}).unwrap()
        embedder = build_embedder(settings).unwrap()
        catalog = build_catalog(settings, embedder).unwrap()
        keywords, parts = build_keywords(settings, catalog), build_parts(settings, catalog)
        if not isinstance(keywords, FedKeywordIndex) or not isinstance(parts, FedPartVectors):
            raise SystemExit("the side indexes are not fed: is --chroma-host a Chroma server?")
        fed = build_service(settings, catalog=catalog, embedder=embedder, keywords=keywords, parts=parts).unwrap()
        plain = build_service(
            settings, catalog=catalog, embedder=embedder, keywords=keywords.local, parts=parts.local
        ).unwrap()
        texts = [f"Note {n}: about {TOPICS[n % len(TOPICS)]}, item {n * 7919 % 1000}" for n in range(args.memories)]
        for start in range(0, len(texts), 250):
            fed.create_many([CreateMemory(content=t) for t in texts[start : start + 250]]).unwrap()
        times: dict[str, list[float]] = {"fed": [], "plain": [], "catch_up": []}
        for service in (fed, plain):  # warm: model, sessions, caches
            service.search(SearchMemories(query=QUERIES[0])).unwrap()
        for n in range(args.searches):
            query = SearchMemories(query=QUERIES[n % len(QUERIES)])
            for name, service in (("fed", fed), ("plain", plain)) if n % 2 == 0 else (("plain", plain), ("fed", fed)):
                started = time.perf_counter()
                service.search(query).unwrap()
                times[name].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            keywords.feed.catch_up("default").unwrap()
            times["catch_up"].append((time.perf_counter() - started) * 1000)
    report: dict[str, Any] = {
        "date": datetime.now(UTC).date().isoformat(),
        "memories": args.memories,
        "searches": args.searches,
        **{f"{name}_ms_p50": round(statistics.median(found), 2) for name, found in times.items()},
        **{f"{name}_ms_p95": round(percentile(found, 0.95), 2) for name, found in times.items()},
    }
    report["fed_minus_plain_ms_p50"] = round(report["fed_ms_p50"] - report["plain_ms_p50"], 2)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
