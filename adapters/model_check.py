"""The load-time check of a model directory: known sentence pairs and its recorded vectors, the verdict cached per machine.

A quantised graph built on one CPU can compute garbage on another (issue 40: an int8 graph quantised U8S8 saturates
on x86-64 without VNNI, mapping every text near one point). So a model directory is run, the first time it loads on a
machine, on sentences whose answer is known: each paraphrase must score clearly above an unrelated sentence, a text
must get the same vector alone and inside a padded batch, and, when the directory records them (reference.json,
written by bench/models/model_dir.py from the fp32 graph), each text's vector must agree with the recorded one. The
verdict is kept per directory, model identity, reference data, CPU flags and onnxruntime version, so later loads
read a small file instead of running the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import asdict, fields, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    # texts (each already prefixed) → their vectors, computed in one padded batch
    EmbedBatch = Callable[[Sequence[str]], npt.NDArray[np.float32]]

CHECK_VERSION = 1  # part of the cache key: a changed check or threshold checks every directory again
REFERENCE_FILE = "reference.json"
# (question, a paraphrase that answers it, an unrelated text): the question is embedded as a query, the others
# as documents. Short and long, names, numbers and a one-word reply ("ok" is where a collapsed graph shows first).
GENERIC_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("How do I reset my password?", "Steps to change the login password of an account.", "ok"),
    (
        "Which editor theme does the user like?",
        "The user prefers a dark colour theme in their code editor.",
        "The invoice for March was paid on the 3rd.",
    ),
    (
        "When do we deploy to production?",
        "Releases go to production every Friday after lunch.",
        "My cat sleeps on the windowsill all afternoon.",
    ),
    ("Is she allergic to anything?", "She has a severe peanut allergy.", "The train to Berlin leaves at nine."),
    (
        "What does Caroline like to paint?",
        "Caroline paints landscapes in watercolour at the weekend.",
        "The database backup runs every night at 2 am and keeps thirty copies.",
    ),
    (
        "what food does the user avoid",
        "The user is vegetarian and never eats meat or fish.",
        "Thanks, that works for me!",
    ),
)
PAIR_MARGIN = 0.1  # a paraphrase's cosine to its question must exceed the unrelated text's by at least this
BATCH_AGREEMENT = 0.9  # cosine of a text's vector alone and inside a padded batch
REFERENCE_AGREEMENT = 0.9  # cosine of a text's vector and the one the directory records (the fp32 graph's)
REMEDY = (
    "put the fp32 graph it was quantised from in its place, quantise that again with 7-bit weights (reduce_range=True, "
    'as bench/models\' scripts do) or as S8S8 QDQ, or go back to the shipped model (embedder = "minilm"); see '
    "docs/configuration.md"
)


@frozen(kw_only=True)
class Reference:
    """A directory's reference data: its own (question, paraphrase, unrelated) triples, and vectors recorded for
    `texts` (each embedded alone as a document) by the graph the directory was built from."""

    pairs: tuple[tuple[str, str, str], ...] = GENERIC_PAIRS
    texts: tuple[str, ...] = ()
    vectors: tuple[tuple[float, ...], ...] = ()


@frozen(kw_only=True)
class Verdict:
    """What the check found: the worst of each measure (None when not measured) and why it failed ("" if it passed)."""

    passed: bool
    reason: str
    worst_margin: float
    worst_batch: float
    worst_reference: float | None
    milliseconds: float


def reference_texts(pairs: Sequence[tuple[str, str, str]] = GENERIC_PAIRS) -> list[str]:
    """The texts whose vectors a directory records: every text of the pairs, once, in order."""
    return list(dict.fromkeys(text for triple in pairs for text in triple))


def _refusal(directory: Path, message: str) -> DomainError:
    return DomainError(
        ErrorCode.INVALID_INPUT, f"The embedding model directory {directory} {message}.", path=str(directory)
    )


def read_reference(directory: Path) -> Result[bytes, DomainError]:
    """The bytes of the directory's reference.json (b"" when it has none), unparsed: they are part of the verdict's
    key, and only a check parses them."""
    path = directory / REFERENCE_FILE
    if not path.is_file():
        return Success(b"")
    try:
        return Success(path.read_bytes())
    except OSError as error:
        return Failure(_refusal(directory, f"has an unreadable {REFERENCE_FILE} ({error}): check its permissions"))


def parse_reference(directory: Path, raw_bytes: bytes) -> Result[Reference, DomainError]:
    """The reference data in `raw_bytes` (the generic pairs without vectors when empty), or an INVALID_INPUT error
    saying what to fix."""
    if not raw_bytes:
        return Success(Reference())
    fix = f"has a bad {REFERENCE_FILE}: write it with bench/models/model_dir.py --reference-onnx, or delete it"
    try:
        raw = json.loads(raw_bytes)
    except ValueError as error:
        return Failure(_refusal(directory, f"{fix} ({type(error).__name__}: {error})"))
    if not isinstance(raw, dict):
        return Failure(_refusal(directory, fix))
    pairs, texts, vectors = raw.get("pairs", GENERIC_PAIRS), raw.get("texts", []), raw.get("vectors", [])
    if not (
        isinstance(pairs, list | tuple)
        and pairs
        and all(isinstance(p, list | tuple) and len(p) == 3 and all(isinstance(t, str) for t in p) for p in pairs)
        and isinstance(texts, list)
        and all(isinstance(t, str) for t in texts)
        and isinstance(vectors, list)
        and len(vectors) == len(texts)
        and all(isinstance(v, list) and v and all(isinstance(x, int | float) for x in v) for v in vectors)
    ):
        return Failure(
            _refusal(directory, f"{fix} (pairs: [question, paraphrase, unrelated] lists; vectors: one per text)")
        )
    reference = Reference(
        pairs=tuple((p[0], p[1], p[2]) for p in pairs),
        texts=tuple(texts),
        vectors=tuple(tuple(float(x) for x in v) for v in vectors),
    )
    return Success(reference)


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    import numpy as np

    norms = np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    unit: npt.NDArray[np.float32] = (vectors / norms).astype(np.float32)
    return unit


def run_check(embed: EmbedBatch, reference: Reference, *, query_prefix: str = "", document_prefix: str = "") -> Verdict:
    """Run the check through `embed` (errors of the model itself propagate to the caller)."""
    import numpy as np

    started = time.perf_counter()
    documents = reference_texts(reference.pairs)
    for text in reference.texts:
        if text not in documents:
            documents.append(text)
    alone = _unit(np.vstack([embed([document_prefix + text]) for text in documents]))
    row = {text: at for at, text in enumerate(documents)}
    if query_prefix == document_prefix:  # a symmetric model: a question's query vector is its document vector
        questions = alone[[row[question] for question, _, _ in reference.pairs]]
    else:
        questions = _unit(np.vstack([embed([query_prefix + question]) for question, _, _ in reference.pairs]))
    margins = [
        float(questions[at] @ alone[row[paraphrase]] - questions[at] @ alone[row[unrelated]])
        for at, (_, paraphrase, unrelated) in enumerate(reference.pairs)
    ]
    batched = _unit(embed([document_prefix + text for text in documents]))
    worst_batch = float(np.min(np.sum(alone * batched, axis=1)))
    worst_reference = None
    if reference.vectors:
        recorded = np.asarray(reference.vectors, dtype=np.float32)
        if recorded.shape[1] != alone.shape[1]:
            worst_reference = -1.0
        else:
            mine = alone[[row[text] for text in reference.texts]]
            worst_reference = float(np.min(np.sum(mine * _unit(recorded), axis=1)))
    reasons = []
    if min(margins) < PAIR_MARGIN:
        question, paraphrase, unrelated = reference.pairs[margins.index(min(margins))]
        shown = round(min(margins), 3) + 0.0  # + 0.0: no "-0.000"
        reasons.append(
            f"{question!r} scores {paraphrase!r} only {shown:+.3f} above the unrelated {unrelated!r} "
            f"(needs {PAIR_MARGIN:+.2f})"
        )
    if worst_batch < BATCH_AGREEMENT:
        reasons.append(
            f"a text alone and in a batch gets vectors at cosine {worst_batch:.3f} (needs {BATCH_AGREEMENT})"
        )
    if worst_reference is not None and worst_reference < REFERENCE_AGREEMENT:
        reasons.append(
            f"a text's vector is at cosine {worst_reference:.3f} from the one recorded in {REFERENCE_FILE} "
            f"(needs {REFERENCE_AGREEMENT})"
        )
    return Verdict(
        passed=not reasons,
        reason="; ".join(reasons),
        worst_margin=round(min(margins), 4) + 0.0,
        worst_batch=round(worst_batch, 4),
        worst_reference=None if worst_reference is None else round(worst_reference, 4),
        milliseconds=round((time.perf_counter() - started) * 1000, 1),
    )


def refused(directory: Path, verdict: Verdict) -> DomainError:
    """The EMBEDDING_ERROR a failed verdict becomes: what failed, and what to do."""
    return DomainError(
        ErrorCode.EMBEDDING_ERROR,
        f"The embedding model in {directory} fails its check on this machine, so its vectors cannot be trusted "
        f"(a quantised graph built for one CPU can compute garbage on another): {verdict.reason}. To fix: {REMEDY}.",
        path=str(directory),
    )


def cpu_flags() -> str:
    """This machine's CPU and its instruction-set flags (what onnxruntime's kernels choose by), as one string."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    flags = " ".join(sorted(line.partition(":")[2].split()))
                    break
    except OSError:
        flags = ""
    # not Linux: the processor's name stands in (platform.processor() may run a program: only when needed)
    return f"{platform.system()} {platform.machine()} {flags or platform.processor()}"


def _runtime_version() -> str:
    """onnxruntime's installed distribution (e.g. onnxruntime-1.32.0), found without importing it or
    importlib.metadata (each costs more than the rest of a cached verdict's lookup)."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return "no onnxruntime"
    found = sorted(path.name for path in Path(spec.origin).parent.parent.glob("onnxruntime*.dist-info"))
    return " ".join(found) or spec.origin


class VerdictCache:
    """Verdicts in a folder (the data directory's cache/model-checks), one small JSON file per key.

    The key is the directory, the model's identity (its name ends in a hash of the graph, tokenizer and settings),
    the reference data, this machine's CPU flags, the onnxruntime version and CHECK_VERSION: any change checks again.
    A folder that cannot be written only costs a check at every load.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @staticmethod
    def key(directory: Path, model_name: str, reference_bytes: bytes) -> str:
        parts = [
            str(CHECK_VERSION),
            str(directory.resolve()),
            model_name,
            hashlib.sha256(reference_bytes).hexdigest(),
            cpu_flags(),
            _runtime_version(),
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

    def recall(self, key: str) -> Verdict | None:
        try:
            raw: Any = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            return Verdict(**{field.name: raw[field.name] for field in fields(Verdict)})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def record(self, key: str, verdict: Verdict, *, directory: Path, model_name: str) -> None:
        body = {
            **asdict(verdict),
            "directory": str(directory),
            "model": model_name,
            "checked_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = self.folder / f"{key}.json"
        spare = target.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            spare.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
            os.replace(spare, target)
        except OSError:  # a read-only data directory: the check runs again next time
            with contextlib.suppress(OSError):
                spare.unlink(missing_ok=True)


class Vetting:
    """One model directory's verdict on this machine: recalled from the verdicts folder (None: not kept), or found by
    running the check and then kept. The embedder holds one and asks it under its own lock."""

    def __init__(self, directory: Path, model_name: str, verdicts: Path | None) -> None:
        self.directory = directory
        self.model_name = model_name
        self.cache = VerdictCache(verdicts) if verdicts is not None else None
        self.verdict: Verdict | None = None

    def _keyed(self) -> Result[tuple[str, bytes], DomainError]:
        return read_reference(self.directory).map(
            lambda raw: (VerdictCache.key(self.directory, self.model_name, raw), raw)
        )

    def recall(self) -> Result[Verdict | None, DomainError]:
        """The verdict already settled or kept in the folder; None when the check has not run on this machine."""
        if self.verdict is not None or self.cache is None:
            return Success(self.verdict)
        cache = self.cache

        def recalled(found: tuple[str, bytes]) -> Verdict | None:
            self.verdict = cache.recall(found[0])
            return self.verdict

        return self._keyed().map(recalled)

    def judge(self, embed: EmbedBatch, *, query_prefix: str, document_prefix: str) -> Result[Verdict, DomainError]:
        """The verdict: recalled, or the check run through `embed` (the model's own errors propagate) and kept."""
        return self.recall().bind(
            lambda verdict: (
                Success(verdict)
                if verdict is not None
                else self._keyed().bind(lambda found: self._run(found, embed, query_prefix, document_prefix))
            )
        )

    def _run(
        self, found: tuple[str, bytes], embed: EmbedBatch, query_prefix: str, document_prefix: str
    ) -> Result[Verdict, DomainError]:
        key, raw = found

        def checked(reference: Reference) -> Verdict:
            verdict = run_check(embed, reference, query_prefix=query_prefix, document_prefix=document_prefix)
            if self.cache is not None:
                self.cache.record(key, verdict, directory=self.directory, model_name=self.model_name)
            self.verdict = verdict
            return verdict

        return parse_reference(self.directory, raw).map(checked)

    def refusal(self, verdict: Verdict) -> DomainError:
        return refused(self.directory, verdict)
