"""LoCoMo evidence recall through the product's public Python API (protocol: shared BENCHMARK.md).

    python bench/locomo.py --data PATH [--unit turns|facts] [--threads session|none] [--backend chroma]
                           [--modes hybrid,semantic,keyword] [--space store|project] [--min-similarity F]
                           [--embedder minilm|MODEL_DIRECTORY] [--chroma-host HOST [--chroma-port PORT]]

Each conversation goes into its own namespace of one store (or, with --space store, its own store), batch
created (one embedding call per conversation). --unit turns (default): one memory per turn, in order, the
turn's dia_id kept as its `citations` and, unless --threads none, its session named as its `thread` (what an
agent saving a chat knows; memories of one thread lend each other context). --unit facts: one memory per distilled fact (`observation`), in a
random order seeded by the conversation's sample_id, the dia_ids it cites kept as its `citations`, no thread; queries
and recall count only the evidence some fact cites. Prints one JSON object on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings


def session_date(raw: str | None) -> datetime | None:
    """LoCoMo dates look like '1:56 pm on 8 May, 2023'."""
    if not raw:
        return None
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def turns(conversation: dict[str, Any]) -> list[tuple[str, str, datetime | None]]:
    """(content, dia_id, session date) for every turn, in order."""
    body = conversation["conversation"]
    found: list[tuple[str, str, datetime | None]] = []
    sessions = sorted(
        (int(key.split("_")[1]), key) for key in body if key.startswith("session_") and key.count("_") == 1
    )
    for _, key in sessions:
        when = session_date(body.get(f"{key}_date_time"))
        for turn in body[key]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            found.append((text, turn["dia_id"], when))
    return found


def cited(raw: Any) -> tuple[str, ...]:
    """A fact's dia_ids: a string like "D1:3" or "D26:14, D26:34", or a list of such strings."""
    parts = raw if isinstance(raw, list) else [raw]
    return tuple(dict.fromkeys(d for part in parts for d in re.split(r"[,;\s]+", str(part)) if d))


def facts(conversation: dict[str, Any]) -> list[tuple[str, tuple[str, ...], datetime | None]]:
    """(fact, dia_ids, session date) for every distilled fact, shuffled with the sample_id as seed."""
    body = conversation["conversation"]
    found: list[tuple[str, tuple[str, ...], datetime | None]] = []
    sessions = sorted((int(key.split("_")[1]), key) for key in conversation.get("observation", {}))
    for number, key in sessions:
        when = session_date(body.get(f"session_{number}_date_time"))
        for speaker_facts in conversation["observation"][key].values():
            for fact, dia_ids in speaker_facts:
                if str(fact).strip() and cited(dia_ids):
                    found.append((str(fact), cited(dia_ids), when))
    random.Random(str(conversation["sample_id"])).shuffle(found)
    return found


def memories(conversation: dict[str, Any], unit: str) -> list[tuple[str, tuple[str, ...], datetime | None]]:
    """What one conversation stores under the chosen protocol: (content, dia_ids cited, created_at)."""
    if unit == "facts":
        return facts(conversation)
    return [(text, (dia_id,), when) for text, dia_id, when in turns(conversation)]


def thread_of_turn(dia_ids: tuple[str, ...], unit: str, threads: str) -> str:
    """A turn's session ("D3:12" → "session-D3") as its thread; facts and --threads none: no thread."""
    return f"session-{dia_ids[0].split(':')[0]}" if unit == "turns" and threads == "session" else ""


def space(conversation: dict[str, Any], kind: str) -> dict[str, Any]:
    """Where a conversation lives: its own namespace of the default store, its own store, or its own project
    (a scope filter) in one shared namespace, where the search must filter the others' memories out."""
    name = str(conversation["sample_id"])
    if kind == "store":
        return {"store": "locomo-" + "".join(c if c.isalnum() else "-" for c in name.lower())}
    if kind == "project":
        return {"project": "locomo-" + name, "namespace": ("locomo",)}
    return {"namespace": ("locomo", name)}


def ingest(service: MemoryService, conversations: list[dict[str, Any]], kind: str, unit: str, threads: str) -> float:
    """Create every memory; returns memories per second, embedding included."""
    total, started = 0, time.perf_counter()
    for conversation in conversations:
        commands = [
            CreateMemory(
                content=text,
                citations=dia_ids,
                created_at=when,
                thread=thread_in(conversation, kind, thread_of_turn(dia_ids, unit, threads)),
                **space(conversation, kind),
            )
            for text, dia_ids, when in memories(conversation, unit)
        ]
        service.create_many(commands).unwrap()
        total += len(commands)
        print(f"ingested {conversation['sample_id']}: {len(commands)} {unit}", file=sys.stderr)
    return total / (time.perf_counter() - started)


def thread_in(conversation: dict[str, Any], kind: str, thread: str) -> str:
    """A session's thread, named after its conversation when conversations share a namespace (--space project)."""
    return f"{conversation['sample_id']}-{thread}" if thread and kind == "project" else thread


def reachable(conversation: dict[str, Any], unit: str) -> set[str] | None:
    """The dia_ids a query's evidence can be matched against (None: all of them, as for turns)."""
    if unit != "facts":
        return None
    return {d for _, dia_ids, _ in facts(conversation) for d in dia_ids}


def questions(conversation: dict[str, Any], unit: str) -> list[tuple[dict[str, Any], set[str]]]:
    """The conversation's scored questions (categories 1-4) with the evidence a memory of this unit can cite."""
    known = reachable(conversation, unit)
    asked = []
    for qa in conversation["qa"]:
        if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
            continue
        evidence = set(qa["evidence"]) if known is None else set(qa["evidence"]) & known
        if evidence:
            asked.append((qa, evidence))
    return asked


def evaluate(
    service: MemoryService, conversations: list[dict[str, Any]], mode: str, kind: str, unit: str
) -> dict[str, Any]:
    recall5: list[float] = []
    recall10: list[float] = []
    reciprocal: list[float] = []
    per_category: dict[str, list[float]] = {}
    latencies: list[float] = []
    for conversation in conversations:
        where = space(conversation, kind)
        for qa, evidence in questions(conversation, unit):
            started = time.perf_counter()
            results = service.search(
                SearchMemories(query=qa["question"], limit=10, min_confidence=0.0, mode=mode, **where)
            ).unwrap()
            latencies.append((time.perf_counter() - started) * 1000)
            got = [hit.memory.citations for hit in results.results]
            top5 = {d for ids in got[:5] for d in ids}
            recall5.append(len(evidence & top5) / len(evidence))
            recall10.append(len(evidence & {d for ids in got for d in ids}) / len(evidence))
            reciprocal.append(next((1 / (rank + 1) for rank, ids in enumerate(got) if evidence & set(ids)), 0.0))
            per_category.setdefault(str(qa["category"]), []).append(recall10[-1])
        print(f"{mode}: {conversation['sample_id']} done", file=sys.stderr)
    latencies.sort()
    return {
        "recall@5": round(statistics.fmean(recall5), 4),
        "recall@10": round(statistics.fmean(recall10), 4),
        "mrr": round(statistics.fmean(reciprocal), 4),
        "per_category": {k: round(statistics.fmean(v), 4) for k, v in sorted(per_category.items())},
        "queries": len(recall10),
        "search_ms_p50": round(statistics.median(latencies), 2),
        "search_ms_p95": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--backend", default="chroma")
    parser.add_argument("--modes", default="hybrid,semantic,keyword")
    parser.add_argument("--unit", default="turns", choices=("turns", "facts"), help="what one memory is")
    parser.add_argument("--threads", default="session", choices=("session", "none"), help="turns' thread")
    parser.add_argument(
        "--space",
        default="namespace",
        choices=("namespace", "store", "project"),
        help="one namespace, one store, or one project (a filter, in one shared namespace) per conversation",
    )
    parser.add_argument("--min-similarity", type=float, default=None, help="a relevance floor (default: the setting's)")
    parser.add_argument(
        "--embedder", default=None, help="the `embedder` setting: minilm (shipped) or a model directory's path"
    )
    parser.add_argument(
        "--chroma-host",
        default=None,
        help="a Chroma server (`chroma run`) instead of embedded Chroma: a new collection",
    )
    parser.add_argument("--chroma-port", type=int, default=8000)
    args = parser.parse_args()
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as home:
        chosen = {"data_dir": home, "backend": args.backend}
        if args.min_similarity is not None:
            chosen["min_similarity"] = args.min_similarity
        if args.embedder is not None:
            chosen["embedder"] = args.embedder
        if args.chroma_host is not None:  # its keyword index and parts: this data folder's caches, fed from the server
            chosen |= {"chroma_host": args.chroma_host, "chroma_port": str(args.chroma_port)}
            chosen["collection"] = f"locomo{int(time.time())}"
        settings = load_settings(chosen, {"HOME": home}).unwrap()
        service = build_service(settings).unwrap()
        per_second = ingest(service, conversations, args.space, args.unit, args.threads)
        modes = {mode: evaluate(service, conversations, mode, args.space, args.unit) for mode in args.modes.split(",")}
    default = modes.get("hybrid") or next(iter(modes.values()))
    report = {
        "recall@5": default["recall@5"],
        "recall@10": default["recall@10"],
        "mrr": default["mrr"],
        "per_category": default["per_category"],
        "queries": default["queries"],
        "modes": modes,
        "ingest_per_s": round(per_second, 1),
        "search_ms_p50": default["search_ms_p50"],
        "search_ms_p95": default["search_ms_p95"],
        "backend": args.backend + ("-server" if args.chroma_host else ""),
        "space": args.space,
        "unit": args.unit,
        "threads": args.threads if args.unit == "turns" else "none",
        "embedder": service.embedder.name,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
