"""What a model costs on this machine: ingest texts/s and one-query ms at 1 and 2 onnxruntime threads, file size.

    python bench/models/cost.py --data PATH --model NAME=FILE[|QUERY_PREFIX|DOC_PREFIX] [...] [--texts 480]
        [--queries 40] [--out FILE]

Research tool (bench/models); nothing here is imported by the product. Ingest: the first --texts turns of
the LoCoMo file ("speaker: text"), sorted by length and embedded in batches of 16 (as the product and
fusion.py do); one query: the median wall time of embedding each of --queries questions alone. Spinning
is off, as in the product. The machine's load average is recorded with the figures: on shared cores
they are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--model", action="append", required=True, help="NAME=FILE[|QUERY_PREFIX|DOC_PREFIX]")
    parser.add_argument("--texts", type=int, default=480)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import onnx_models

    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    turns, questions = [], []
    for item in conversations:
        conv = item["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
            turns += [f"{t['speaker']}: {t['text']}" for t in conv[key]]
        questions += [qa["question"] for qa in item["qa"]]
    turns, questions = turns[: args.texts], questions[: args.queries]
    report: dict[str, object] = {"texts": len(turns), "queries": len(questions), "rows": []}
    for spec in args.model:
        name, rest = spec.split("=", 1)
        path, *prefixes = rest.split("|")
        query_prefix, doc_prefix = [*prefixes, "", ""][:2]
        os.environ["COST_MODEL"] = path
        onnx_models.MODELS["cost"] = ("COST_MODEL", query_prefix, doc_prefix, 512 if query_prefix else 256)
        for threads in (int(t) for t in args.threads.split(",")):
            model = onnx_models.PrefixedOnnx("cost", threads=threads)
            model.embed(turns[:32], "passage")  # warm-up
            start = time.perf_counter()
            model.embed(turns, "passage")
            ingest = len(turns) / (time.perf_counter() - start)
            times = []
            for question in questions:
                start = time.perf_counter()
                model.embed([question], "query")
                times.append((time.perf_counter() - start) * 1000)
            row = {
                "model": name,
                "threads": threads,
                "ingest_texts_per_s": round(ingest, 1),
                "query_ms_p50": round(statistics.median(times), 2),
                "file_mb": round(Path(path).stat().st_size / 1e6, 1),
                "load_average": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(row), file=sys.stderr, flush=True)
            report["rows"].append(row)  # type: ignore[union-attr]
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
