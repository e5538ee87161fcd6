"""Namespace resolution from the runtime config (decision 18, spec 003 'Namespace isolation')."""

import pytest

from agent_memory.domain.namespaces import ConfigurationError, resolve_namespace


def test_user_id_gives_the_user_namespace() -> None:
    assert resolve_namespace(None, {"user_id": "u-123"}) == ("user", "u-123")


def test_org_and_agent_give_the_org_namespace() -> None:
    assert resolve_namespace(None, {"org_id": "acme", "agent_id": "alpha"}) == ("org", "acme", "alpha")


def test_user_id_wins_over_org_and_agent() -> None:
    assert resolve_namespace(None, {"user_id": "u-1", "org_id": "acme", "agent_id": "alpha"}) == ("user", "u-1")


def test_a_template_is_filled_from_the_config() -> None:
    assert resolve_namespace(("{user_id}", "memories"), {"user_id": "u-123"}) == ("u-123", "memories")


def test_placeholders_may_sit_inside_a_label_and_repeat() -> None:
    config = {"org_id": "acme", "user_id": "u-1"}
    assert resolve_namespace(("org-{org_id}", "{user_id}", "{user_id}-notes"), config) == (
        "org-acme",
        "u-1",
        "u-1-notes",
    )


def test_a_template_without_placeholders_needs_no_config() -> None:
    assert resolve_namespace(("shared", "facts"), None) == ("shared", "facts")
    assert resolve_namespace("facts", {}) == ("facts",)


def test_langgraph_style_configurable_is_read_and_the_top_level_wins() -> None:
    assert resolve_namespace(None, {"configurable": {"user_id": "u-9"}}) == ("user", "u-9")
    assert resolve_namespace(("{user_id}",), {"configurable": {"user_id": "inner"}, "user_id": "outer"}) == ("outer",)


def test_non_string_values_become_labels() -> None:
    assert resolve_namespace(("{user_id}",), {"user_id": 42}) == ("42",)


def test_a_missing_template_key_names_the_key_and_the_keys_present() -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_namespace(("{user_id}", "memories"), {"org_id": "acme", "configurable": {"agent_id": "a"}})
    message = str(caught.value)
    assert "'user_id'" in message and "'org_id'" in message and "'agent_id'" in message
    assert caught.value.key == "user_id"
    assert caught.value.present == ("agent_id", "org_id")


def test_no_template_and_no_known_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_namespace(None, {"thread_id": "t-1"})
    assert "'user_id'" in str(caught.value) and "'thread_id'" in str(caught.value)
    with pytest.raises(ConfigurationError, match="no keys"):
        resolve_namespace(None, None)


def test_org_without_agent_names_the_missing_agent_id() -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_namespace(None, {"org_id": "acme"})
    assert caught.value.key == "agent_id" and "'org_id'" in str(caught.value)


@pytest.mark.parametrize("value", ["", "   ", None])
def test_an_empty_or_null_value_counts_as_missing(value: object) -> None:
    with pytest.raises(ConfigurationError, match="user_id"):
        resolve_namespace(("{user_id}",), {"user_id": value})


def test_a_value_that_would_break_out_of_its_label_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="invalid"):
        resolve_namespace(None, {"user_id": "a/../b"})


@pytest.mark.parametrize("template", [("{}",), ("{0}",), ("{user.id}",), ("{user_id",), (5,)])
def test_malformed_templates_are_configuration_errors(template: tuple[object, ...]) -> None:
    with pytest.raises(ConfigurationError):
        resolve_namespace(template, {"user_id": "u"})  # type: ignore[arg-type]


def test_a_config_that_is_not_a_mapping_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="mapping"):
        resolve_namespace(None, ["user_id"])  # type: ignore[arg-type]


def test_configuration_error_escapes_except_exception() -> None:
    assert issubclass(ConfigurationError, BaseException)
    assert not issubclass(ConfigurationError, Exception)
    with pytest.raises(ConfigurationError):
        try:
            resolve_namespace(None, {})
        except Exception:  # what agent frameworks do around tool calls
            pytest.fail("ConfigurationError must not be swallowed by `except Exception`")
