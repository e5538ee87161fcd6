"""Embedded Chroma alone: overwriting 200 existing records by one upsert against a delete then an upsert (the split
write issue 47 tried for a journaled batch of content updates, and left out), the same 200 ids again and again, each
way on a collection of its own, in turn, then a delete of the 200. Prints one JSON object (ms of each write).

    PYTHONPATH=. python bench/chroma_rewrites.py --records 400 --rounds 6 --vectors sentences

`--vectors sentences` embeds sentences of the project's own docs with the shipped model (diverse English: the
store holds `--records` of them, each round writes 200 others); `random` draws unit Gaussian vectors (the hardest
case for the vector index's in-place update); `template` embeds bench/langgraph_writes.py's notes (near-identical
texts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import chromadb
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BATCH = 200


def sentences() -> list[str]:
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "architecture.md"]
    text = re.sub(r"\s+", " ", " ".join(page.read_text() for page in pages))
    found = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 30 < len(s.strip()) < 300]
    return list(dict.fromkeys(found))


def vectors(kind: str, records: int, rounds: int) -> tuple[list[Any], list[list[Any]]]:
    """The store's vectors and each round's 200 new ones."""
    if kind == "random":
        rng = np.random.default_rng(0)

        def drawn(n: int) -> list[Any]:
            v = rng.standard_normal((n, 384)).astype("float32")
            return (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()

        return drawn(records), [drawn(BATCH) for _ in range(rounds)]
    from agent_memory.adapters.onnx_embedder import OnnxEmbedder

    embedder = OnnxEmbedder()
    if kind == "template":
        from bench.langgraph_writes import text

        base = [text(n, -1) for n in range(records)]
        later = [[text(n, 1000 + r) for n in range(BATCH)] for r in range(rounds)]
    else:
        pool = sentences()
        if len(pool) < records + 2 * BATCH:
            raise SystemExit(f"the docs hold {len(pool)} sentences: ask for at most {len(pool) - 2 * BATCH} records")
        base = pool[:records]
        spare = pool[records:]
        later = [spare[(r % 2) * BATCH : (r % 2 + 1) * BATCH] for r in range(rounds)]
    return embedder.embed_documents(base).unwrap(), [embedder.embed_documents(t).unwrap() for t in later]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--vectors", choices=["sentences", "random", "template"], default="sentences")
    arguments = parser.parse_args()
    base, later = vectors(arguments.vectors, arguments.records, arguments.rounds)
    ids = [f"id{n}" for n in range(arguments.records)]
    collections = {}
    for way in ("upsert", "delete_then_upsert"):
        client = chromadb.PersistentClient(tempfile.mkdtemp(prefix="chroma-rewrites-"))
        collection = client.create_collection("rewrites", configuration={"hnsw": {"space": "cosine"}})
        collection.add(ids=ids, embeddings=base, documents=["d"] * len(ids), metadatas=[{"round": -1}] * len(ids))
        collections[way] = collection
    written = ids[:BATCH]
    spent: dict[str, list[float]] = {way: [] for way in collections}
    for round_, new in enumerate(later):
        for way, collection in collections.items():
            fields = {"documents": [f"round {round_}"] * BATCH, "metadatas": [{"round": round_}] * BATCH}
            began = time.perf_counter()
            if way == "delete_then_upsert":
                collection.delete(ids=written)
            collection.upsert(ids=written, embeddings=new, **fields)
            spent[way].append(round((time.perf_counter() - began) * 1000, 1))
    deleted: dict[str, float] = {}
    for way, collection in collections.items():  # what the records cost to delete afterwards (LangGraph's adelete)
        began = time.perf_counter()
        collection.delete(ids=written)
        deleted[way] = round((time.perf_counter() - began) * 1000, 1)
    medians = {way: statistics.median(ms) for way, ms in spent.items()}
    report = {
        "vectors": arguments.vectors,
        "records": arguments.records,
        "rounds": arguments.rounds,
        "ms": spent,
        "median_ms": medians,
        "upsert_over_split": round(medians["upsert"] / medians["delete_then_upsert"], 2),
        "delete_afterwards_ms": deleted,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
