"""A broad question about the one asking answers with the user's own memories first (issue 48), with the shipped
model and rule over embedded Chroma: ten facts about the user beside ten project facts, no type or scope to tell
them apart (the text says it: "the user", the user's name), then the same with a `type` on the user's facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.search.about_user import asks_about_user, user_names
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow  # loads the real MiniLM graph

USER = [
    "The user's name is Dana Whitfield.",
    "Dana lives in Porto, near the river.",
    "Dana drinks her coffee black, two cups before noon.",
    "Dana is vegetarian.",
    "Dana's daughter Lea starts school in September.",
    "Dana plays the violin in an amateur orchestra.",
    "The user prefers answers in short bullet points.",
    "Dana is allergic to penicillin.",
    "Dana's birthday is on 3 June.",
    "Dana runs 5 km every Sunday morning.",
]
PROJECT = [
    "The billing service is written in Go and deployed on Kubernetes.",
    "Invoices are generated nightly by a cron job at 01:00 UTC.",
    "The payments API uses idempotency keys on every POST.",
    "Staging runs PostgreSQL 16; production is still on 15.",
    "The frontend is a React app bundled with Vite.",
    "Feature flags live in LaunchDarkly under the project key bill.",
    "Code review needs two approvals before merging to main.",
    "Logs are shipped to Loki and kept for 30 days.",
    "The team's sprint ends every other Thursday.",
    "The CI pipeline runs unit tests on every push and e2e tests nightly.",
]


def service_in(home: Path) -> MemoryService:
    return build_service(load_settings({"data_dir": str(home)}, {"HOME": str(home)}).unwrap()).unwrap()


def users_in_top_ten(service: MemoryService, question: str) -> int:
    found = service.search(SearchMemories(query=question, limit=10)).unwrap()
    assert len(found.results) == 10
    return sum(hit.memory.content in USER for hit in found.results)


@pytest.mark.parametrize("question", ["what do you know about me?", "tell me about myself"])
def test_a_broad_question_about_me_answers_with_the_users_facts_first(tmp_path: Path, question: str) -> None:
    service = service_in(tmp_path)
    # interleaved, so neither the order of writing nor the time of each decides
    mixed = [text for pair in zip(PROJECT, USER, strict=True) for text in pair]
    service.create_many([CreateMemory(content=text) for text in mixed]).unwrap()
    assert users_in_top_ten(service, question) >= 8
    # a broad question about nobody in particular is not steered: it keeps the freshest first
    found = service.search(SearchMemories(query="what do you remember?", limit=10)).unwrap()
    assert found.broad and len(found.results) == 10


def test_a_user_type_marks_the_users_facts_without_their_words(tmp_path: Path) -> None:
    service = service_in(tmp_path)
    plain = [text.replace("The user's name is", "The name is").replace("The user", "She") for text in USER]
    service.create_many(
        [CreateMemory(content=text) for text in PROJECT] + [CreateMemory(content=text, type="user") for text in plain]
    ).unwrap()
    found = service.search(SearchMemories(query="what do you know about me?", limit=10)).unwrap()
    assert sum(hit.memory.type == "user" for hit in found.results) == 10


def test_what_makes_a_memory_about_the_user() -> None:
    assert asks_about_user("What do you know about me?") and asks_about_user("what's in my profile")
    assert not asks_about_user("what do you remember?")
    assert user_names(["User's name is Marco Bellini; he goes by Marco.", "Call me Ishmael."]) == {
        "marco",
        "bellini",
        "ishmael",
    }
    assert user_names(["I am tired.", "The project name is Atlas."]) == frozenset()
