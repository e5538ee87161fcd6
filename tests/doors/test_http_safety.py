"""The HTTP doors' shared rules: loopback, Host and Origin matching, JSON-only media types, bytes and depth."""

from __future__ import annotations

import pytest

from agent_memory.domain.errors import ErrorCode
from agent_memory.entrypoints.http.safety import (
    HttpPolicy,
    host_name,
    json_body_problem,
    json_depth,
    media_type_problem,
    refuse_open_bind,
)


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost", "localhost"),
        ("LocalHost:8080", "localhost"),
        ("[::1]:8080", "::1"),
        ("[::1]", "::1"),
        ("10.0.0.5:80", "10.0.0.5"),
        ("[::1", None),
        ("a:b", None),
        (":8080", None),
        ("host:99999999", None),
        ("localhost:99999", None),  # found by bench/fuzz.py: a URL parser raised on it (REST answered 500)
        ("localhost:65535", "localhost"),
        ("localhost:\u00b2", None),  # a digit to str.isdigit, not to int()
        ("", None),
    ],
)
def test_host_names_are_read_from_host_headers(header: str, name: str | None) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.9.9.9"])
def test_no_token_is_fine_on_loopback(host: str) -> None:
    assert refuse_open_bind(host, None, "the REST API") is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.7", "memory.internal"])
def test_no_token_beyond_loopback_is_refused_with_what_to_do(host: str) -> None:
    refusal = refuse_open_bind(host, None, "the REST API")
    assert refusal is not None and refusal.code is ErrorCode.INVALID_INPUT
    assert "MEMORY_API_TOKEN" in refusal.message and host in refusal.message
    assert refuse_open_bind(host, "a-token", "the REST API") is None


def test_origins_are_same_origin_loopback_or_listed() -> None:
    policy = HttpPolicy(
        bind_host="0.0.0.0", allowed_hosts=("memory.internal",), allowed_origins=("https://app.example/",)
    )
    assert policy.origin_allowed(None, "anything")
    assert policy.origin_allowed("http://memory.internal:8080", "memory.internal:8080")
    assert policy.origin_allowed("https://APP.example", "memory.internal:8080")
    assert policy.origin_allowed("http://localhost:3000", "memory.internal:8080")
    assert not policy.origin_allowed("http://memory.internal:9999", "memory.internal:8080")
    assert not policy.origin_allowed("http://evil.example", "memory.internal:8080")
    assert not policy.origin_allowed("null", "memory.internal:8080")
    assert not policy.origin_allowed("http://[::1", "localhost")


def test_the_sdk_patterns_cover_loopback_the_bound_address_and_the_lists() -> None:
    policy = HttpPolicy(
        bind_host="10.0.0.5", allowed_hosts=("memory.internal",), allowed_origins=("https://app.example",)
    )
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "10.0.0.5:*", "memory.internal:*"} <= set(policy.hosts_for_sdk)
    assert {"http://localhost:*", "http://10.0.0.5:*", "https://app.example"} <= set(policy.origins_for_sdk)
    assert "0.0.0.0:*" not in HttpPolicy(bind_host="0.0.0.0").hosts_for_sdk


@pytest.mark.parametrize(
    ("content_type", "has_body", "refused"),
    [
        ("application/json", True, False),
        ("application/json; charset=utf-8", True, False),
        (None, False, False),
        (None, True, True),
        ("", True, True),
        ("text/plain", False, True),
        ("application/json; charset=latin-1", True, True),
        ("application/x-www-form-urlencoded", True, True),
    ],
)
def test_only_json_bodies_pass(content_type: str | None, has_body: bool, refused: bool) -> None:
    assert (media_type_problem(content_type, has_body) is not None) is refused


def test_nesting_is_counted_outside_strings_only() -> None:
    assert json_depth(b'{"a": [1, {"b": "[[[{{{"}]}') == 3
    assert json_depth(b'"\\"[[["') == 0
    assert json_depth(b"[" * 10_000, stop_after=64) == 65
    assert json_body_problem(b"[" * 64 + b"]" * 64) is None
    assert "64" in (json_body_problem(b"[" * 65 + b"]" * 65) or "")
    assert "UTF-8" in (json_body_problem(b'{"a": "\xff"}') or "")
