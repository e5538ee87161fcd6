"""Every "decision N" and "spec 00N" the code cites is defined in docs/decisions.md, which ships in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("domain", "adapters", "entrypoints", "src", "tests", "bench")
DECISIONS = re.compile(r"\bdecisions? ((?:\d+)(?:(?:, | and )\d+)*)", re.IGNORECASE)
SPECS = re.compile(r"\bspecs? (00\d)", re.IGNORECASE)


def cited() -> tuple[set[int], set[str]]:
    decisions: set[int] = set()
    specs: set[str] = set()
    for folder in CODE:
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == Path(__file__).name:
                continue
            text = path.read_text(encoding="utf-8")
            for found in DECISIONS.finditer(text):
                decisions.update(int(number) for number in re.findall(r"\d+", found.group(1)))
            specs.update(SPECS.findall(text))
    return decisions, specs


def test_every_cited_decision_and_spec_is_defined_in_docs() -> None:
    document = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
    defined = {int(number) for number in re.findall(r"^(\d+)\. \*\*", document, re.MULTILINE)}
    decisions, specs = cited()
    assert decisions, "the scan found no citation at all: the pattern is broken"
    assert decisions <= defined, f"cited but not defined in docs/decisions.md: {sorted(decisions - defined)}"
    assert all(f"**spec {spec}**" in document for spec in specs), specs
