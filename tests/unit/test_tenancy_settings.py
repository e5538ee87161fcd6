"""The tenancy settings: MEMORY_NAMESPACE and MEMORY_API_TOKENS, validated at load, never echoing a token."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.domain.errors import ErrorCode
from agent_memory.entrypoints.settings import load_settings
from agent_memory.entrypoints.token_tenancy import Tenancy
from tests.isolation import empty_config


def env(tmp_path: Path, **variables: str) -> dict[str, str]:
    return {"HOME": str(tmp_path), "MEMORY_CONFIG": empty_config(tmp_path), **variables}


def test_a_pin_and_token_namespaces_load_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        env=env(tmp_path, MEMORY_NAMESPACE="org/o-1", MEMORY_API_TOKENS="tok-a=org/o-1/alice, tok-b=org/o-1/bob")
    ).unwrap()
    assert settings.namespace == ("org", "o-1")
    assert settings.api_tokens == (("tok-a", ("org", "o-1", "alice")), ("tok-b", ("org", "o-1", "bob")))
    assert "tok-a" not in repr(settings)
    tenancy = Tenancy.of(settings, "tok-admin")
    assert tenancy.namespace_of("Bearer tok-a") == (True, ("org", "o-1", "alice"))
    assert tenancy.namespace_of("Bearer tok-admin") == (True, ("org", "o-1"))
    assert tenancy.namespace_of("Bearer tok-c")[0] is False
    assert tenancy.namespace_of(None)[0] is False


@pytest.mark.parametrize(
    "variables",
    [
        {"MEMORY_NAMESPACE": ""},
        {"MEMORY_NAMESPACE": "/"},
        {"MEMORY_API_TOKENS": "tok-secret"},
        {"MEMORY_API_TOKENS": "tok-secret="},
        {"MEMORY_API_TOKENS": "tok-secret=user/a,tok-secret=user/b"},
        {"MEMORY_NAMESPACE": "user/alice", "MEMORY_API_TOKENS": "tok-secret=user/bob"},
        {"MEMORY_NAMESPACE": "user/alice", "MEMORY_API_TOKENS": "tok-secret=user"},
    ],
)
def test_an_empty_or_escaping_namespace_is_refused_at_load(tmp_path: Path, variables: dict[str, str]) -> None:
    loaded = load_settings(env=env(tmp_path, **variables))
    error = loaded.failure()
    assert error.code is ErrorCode.INVALID_INPUT
    assert "tok-secret" not in error.message


def test_token_namespaces_alone_let_the_http_doors_leave_loopback() -> None:
    assert Tenancy(tokens=(("tok", ("user", "a")),)).secured
    assert not Tenancy(pin=("user", "a")).secured
