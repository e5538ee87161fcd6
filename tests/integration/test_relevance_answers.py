"""Answers as long as what is known, with the shipped model and the evidence rule calibrated for it (issue 40,
decision 24: measured, not shipped, a model directory turns it on) over embedded Chroma: a small profile store,
questions asked as people ask them; the store and questions are not the calibration's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from agent_memory.adapters.onnx_embedder import OnnxEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow

PROFILE = [
    "User keeps a sourdough starter and bakes bread every Sunday.",
    "User's bike is a steel touring bike; commutes 12 km each way.",
    "User is learning the cello; lessons are on Wednesday evenings.",
    "User's landlord is Mrs. Okafor; rent is due on the 3rd of each month.",
    "User prefers tea without sugar and drinks no coffee after noon.",
    "User's sister Ines lives in Porto and visits in August.",
    "User runs a 10k on Saturday mornings with a local club.",
    "User's car insurance renews in March with Allianz.",
    "User is allergic to cats.",
    "User wants reminders sent by email, never by SMS.",
    "User's favourite author is Ursula K. Le Guin.",
    "User works as a data engineer at a logistics company.",
]


class EvidenceAsked:
    """The shipped model, its rule asking each hit for evidence (the keys a model directory's relevance.json adds)."""

    def __init__(self) -> None:
        self.model = OnnxEmbedder()
        self.relevance_rule = attrs.evolve(self.model.relevance_rule, keep=0.15, alone=0.30, cover=0.3, close=0.15)

    def __getattr__(self, name: str) -> object:
        return getattr(self.model, name)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    home: Path = tmp_path_factory.mktemp("profile")
    built = build_service(
        load_settings({"data_dir": str(home)}, {"HOME": str(home)}).unwrap(), embedder=EvidenceAsked()
    ).unwrap()
    built.create_many([CreateMemory(content=text) for text in PROFILE]).unwrap()
    yield built


def answer(service: MemoryService, question: str, **options: object) -> list[str]:
    found = service.search(SearchMemories(query=question, limit=5, **options)).unwrap()  # type: ignore[arg-type]
    assert not found.broad
    return [hit.memory.content for hit in found.results]


@pytest.mark.parametrize(
    ("question", "known"),
    [
        ("allergies", "User is allergic to cats."),
        ("who is Ines", "User's sister Ines lives in Porto and visits in August."),
        ("cello teacher", "User is learning the cello; lessons are on Wednesday evenings."),
    ],
)
def test_an_answer_holds_what_answers_the_question_and_drops_the_rest(
    service: MemoryService, question: str, known: str
) -> None:
    assert answer(service, question) == [known]
    assert len(answer(service, question, min_similarity=0.0)) == 5  # judging off: padded to the limit


@pytest.mark.parametrize("question", ["what's my salary", "when is my dentist appointment", "do I have a dog"])
def test_a_question_nothing_answers_is_answered_empty(service: MemoryService, question: str) -> None:
    assert answer(service, question) == []
    assert answer(service, question, mode="semantic") == []
    assert len(answer(service, question, min_similarity=0.0)) == 5
