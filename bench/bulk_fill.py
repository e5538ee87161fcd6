"""A bulk fill of an embedded Chroma store for the size benchmarks: large batches in the product's own stored format.

    python bench/bulk_fill.py --data locomo-dev.json --size 1000000 --home DIR [--batch 5000] [--no-mirror-file]

Why: bench/million.py filled through the adapter 1,000 memories a call, each call a Chroma upsert (a read of every
id first), a Tantivy commit and a mirror update: 108–144 memories/s, 2–2.6 hours for a million (issue 47). This
fill writes the same records as the product, in large batches, each part by the product's own code:
- Chroma records: ids, documents and metadata built by adapters.chroma.records.new_record_metadata (the filter
  keys and the JSON `record`, no commit mark: embedded Chroma never writes one), added with `collection.add` under
  the session's lock and generation protocol (adapters.chroma.session: other processes reload afterwards), in
  batches of `--batch` (at most Chroma's own limit);
- the keyword index: the service's own KeywordIndex (SQLite rows + Tantivy top-k) given keyword_entry(memory) for
  every memory in one `rebuild` (one SQLite transaction, one Tantivy commit: what `memory reindex` does);
- parts: none (every text is within the model's window, as a create of it would leave none);
- the mirror file (adapters.chroma.mirror_file): the store's columns at the data directory's generation after the
  fill, so a warm process restores the mirror instead of reading a million records out of Chroma.

Texts are the dev file's turns cycled with a numbered suffix (bench/perf.py's corpus); vectors are real embeddings
of the first 2,000 texts reused with a little noise past that (perf.py's fill); namespace user/u{i % 20}, project
p{i % 10}. `bulk_fill` is what bench/million.py and the test (tests/integration/test_bulk_fill.py) call.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.adapters.chroma import mirror_file
from agent_memory.adapters.chroma.records import new_record_metadata
from agent_memory.adapters.chroma.vector_mirror import Columns, Keys
from agent_memory.adapters.shared.record_time import NEVER_EXPIRES_US, micros
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

STORE = "default"


def turns(data: Path) -> list[str]:
    """The dev file's turns as `speaker: text` (the vocabulary the synthetic memories are drawn from)."""
    found: list[str] = []
    for conversation in json.loads(data.read_text(encoding="utf-8")):
        for key, value in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                found.extend(f"{t['speaker']}: {t['text']}" for t in value)
    return found


def corpus(data: Path, n: int, seed: int = 7) -> list[str]:
    """n memory texts: the dev file's turns, cycled with a numbered suffix past its size (bench/perf.py's corpus)."""
    said = turns(data)
    rng = random.Random(seed)
    return [said[i % len(said)] + ("" if i < len(said) else f" (note {i})") for i in rng.sample(range(n), n)]


def service_at(home: str) -> Any:
    """The normal service of an embedded Chroma data directory (the composition root, as every door builds it)."""
    return build_service(load_settings({"data_dir": home, "backend": "chroma"}, {"HOME": home}).unwrap()).unwrap()


def synthetic(service: Any, texts: list[str], *, real: int = 2000, seed: int = 3) -> tuple[list[Memory], np.ndarray]:
    """The memories and their unit vectors: real embeddings of the first `real` texts, reused with noise past that
    (row i's vector is text i % real's embedding plus noise)."""
    n = len(texts)
    base = np.array(service.embedder.embed_documents(texts[: min(n, real)]).unwrap(), dtype=np.float32)
    rng = np.random.default_rng(seed)
    vectors = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, 100_000):  # in slices: a million rows of noise at once would need 3 GB of float64
        stop = min(n, start + 100_000)
        chunk = base[np.arange(start, stop) % len(base)] + rng.normal(0, 0.02, (stop - start, base.shape[1]))
        vectors[start:stop] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    now = datetime.now(UTC)
    memories = [
        Memory(
            id=str(uuid.uuid4()),
            content=text,
            created_at=now,
            updated_at=now,
            project=f"p{i % 10}",
            namespace=("user", f"u{i % 20}"),
        )
        for i, text in enumerate(texts)
    ]
    return memories, vectors


def columns_of(memories: list[Memory], vectors: np.ndarray) -> Columns:
    """The mirror's columns of these memories, as VectorMirror keeps them (records as the file's bytes)."""
    return Columns(
        ids=[m.id for m in memories],
        keys=[Keys.of(m) for m in memories],
        records=[mirror_file.record_bytes(m) for m in memories],
        matrix=vectors,
        deleted=np.array([m.deleted for m in memories], dtype=np.bool_),
        expires_us=np.array(
            [NEVER_EXPIRES_US if m.expires_at is None else micros(m.expires_at) for m in memories], dtype=np.int64
        ),
        anchor_us=np.array([micros(m.decay_anchor) for m in memories], dtype=np.int64),
        stable=np.array([m.decay_policy is DecayPolicy.STABLE for m in memories], dtype=np.bool_),
    )


def bulk_fill(
    service: Any,
    memories: list[Memory],
    vectors: np.ndarray,
    *,
    batch: int = 5000,
    mirror: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Write these memories into the service's default store (embedded Chroma) in the product's stored format;
    returns the seconds each part took. The store must be new or hold none of these ids."""
    store = service.catalog.open(STORE, create=True).unwrap()
    session = store.session
    batch = min(batch, store.batch_size) if store.batch_size else batch
    figures: dict[str, Any] = {"memories": len(memories), "batch": batch}
    started = time.perf_counter()

    def add_all(collection: Any) -> int:
        for start in range(0, len(memories), batch):
            part = memories[start : start + batch]
            collection.add(
                ids=[m.id for m in part],
                embeddings=vectors[start : start + len(part)],
                documents=[m.content for m in part],
                metadatas=[new_record_metadata(m) for m in part],
            )
            if (start // batch) % 20 == 0:
                progress(f"chroma {start + len(part)} / {len(memories)} at {time.perf_counter() - started:.0f} s")
        return int(collection.count())

    # one hold of the directory's lock, the generation bumped before the write (Session.run's protocol)
    counted = session.run("bulk fill", lambda client: add_all(store._resolve(client)), write=True, needs=None)
    figures["chroma_s"] = round(time.perf_counter() - started, 1)
    figures["chroma_count"] = counted
    session.mirrors.pop(store._collection_id, None)  # this process's mirror (if any) predates the fill
    progress(f"chroma done: {counted} records in {figures['chroma_s']} s")

    started = time.perf_counter()
    service.keywords.rebuild(STORE, [keyword_entry(m) for m in memories]).unwrap()
    figures["keywords_s"] = round(time.perf_counter() - started, 1)
    progress(f"keywords done in {figures['keywords_s']} s")

    if mirror:
        started = time.perf_counter()
        generation = session.run("read the generation", lambda client: session.generation)
        path = mirror_file.save(
            session.directory, str(store._collection_id), generation, vectors.shape[1], columns_of(memories, vectors)
        )
        figures["mirror_file_s"] = round(time.perf_counter() - started, 1)
        figures["mirror_file_mib"] = path.stat().st_size // 2**20
        progress(f"mirror file done in {figures['mirror_file_s']} s")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="the dev file (LoCoMo JSON) whose turns the texts are drawn from")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--home", required=True, help="the data directory to fill (new)")
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--no-mirror-file", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    service = service_at(args.home)
    memories, vectors = synthetic(service, corpus(Path(args.data), args.size))
    prepared = time.perf_counter() - started
    figures = bulk_fill(
        service,
        memories,
        vectors,
        batch=args.batch,
        mirror=not args.no_mirror_file,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    total = time.perf_counter() - started
    figures |= {"prepare_s": round(prepared, 1), "total_s": round(total, 1), "per_s": round(args.size / total)}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
