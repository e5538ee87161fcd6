"""Namespace resolution for the agent tools (decision 18): templates filled from the runtime config."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.model import check_namespace

__all__ = ["ConfigurationError", "resolve_namespace"]


class ConfigurationError(BaseException):
    """The runtime config cannot give a namespace: a key is missing, empty, or not a valid label.

    Deliberately a BaseException and not an Exception, as in LangMem: agent frameworks catch
    Exception around tool calls and hand the message back to the model as a tool result. A missing
    tenant key is a bug of the application that wires the tool, not something the model can fix,
    and letting the model carry on would risk writing into the wrong (or a shared) namespace. So
    it propagates past `except Exception` and stops the run; catch it by name where you mean to.
    """

    def __init__(self, message: str, *, key: str | None = None, present: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.key = key
        self.present = present

    def __str__(self) -> str:
        return self.message


_FORMATTER = string.Formatter()


def config_values(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keys a namespace may use: config["configurable"] (LangGraph style), then the top level on top."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"The config must be a mapping like {{'user_id': 'u-123'}}, got {type(config).__name__}."
        )
    nested = config.get("configurable")
    values: dict[str, Any] = dict(nested) if isinstance(nested, Mapping) else {}
    values.update({k: v for k, v in config.items() if k != "configurable"})
    return {str(k): v for k, v in values.items() if v is not None}


def resolve_namespace(template: tuple[str, ...] | str | None, config: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The namespace for one call.

    With a template, every `{key}` placeholder is replaced by config[key] (or
    config["configurable"][key]); labels without placeholders stay as they are. Without a template,
    `user_id` gives ("user", id), else `org_id` and `agent_id` give ("org", org, agent). A missing
    or empty key, or a value that is not a valid label (one containing '/', say), raises
    ConfigurationError naming the key and the keys present.
    """
    values = config_values(config)
    if template is None:
        return _default_namespace(values)
    labels = (template,) if isinstance(template, str) else tuple(template)
    return _checked(tuple(_fill(label, labels, values) for label in labels), values)


def _present(values: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(values))


def _keys_text(values: Mapping[str, Any]) -> str:
    present = _present(values)
    return ", ".join(repr(k) for k in present) if present else "no keys"


def _value(key: str, values: Mapping[str, Any], needed_by: str) -> str:
    if key not in values:
        raise ConfigurationError(
            f"{needed_by} needs config key {key!r}, but the config has {_keys_text(values)} "
            "(looked at the top level and under 'configurable').",
            key=key,
            present=_present(values),
        )
    text = str(values[key]).strip()
    if not text:
        raise ConfigurationError(
            f"Config key {key!r} is empty: {needed_by} needs a value.", key=key, present=_present(values)
        )
    return text


def _fill(label: str, template: tuple[str, ...], values: Mapping[str, Any]) -> str:
    if not isinstance(label, str):
        raise ConfigurationError(f"Namespace template {template!r} must hold only strings, got {label!r}.")
    try:
        parts = list(_FORMATTER.parse(label))
    except ValueError as error:
        raise ConfigurationError(f"Namespace template label {label!r} is malformed: {error}.") from None
    filled: list[str] = []
    for literal, key, _spec, _conversion in parts:
        filled.append(literal)
        if key is None:
            continue
        if not key.isidentifier():
            raise ConfigurationError(
                f"Namespace template label {label!r} has placeholder {{{key}}}: use a config key name like {{user_id}}."
            )
        filled.append(_value(key, values, f"Namespace template {template!r}"))
    return "".join(filled)


def _default_namespace(values: Mapping[str, Any]) -> tuple[str, ...]:
    if "user_id" in values:
        return _checked(("user", _value("user_id", values, "The default namespace")), values)
    if "org_id" in values or "agent_id" in values:
        needed = "The ('org', org_id, agent_id) namespace"
        return _checked(("org", _value("org_id", values, needed), _value("agent_id", values, needed)), values)
    raise ConfigurationError(
        "No namespace template was given, so the config needs 'user_id' (for ('user', id)) or "
        f"'org_id' and 'agent_id' (for ('org', org, agent)); it has {_keys_text(values)}.",
        key="user_id",
        present=_present(values),
    )


def _checked(namespace: tuple[str, ...], values: Mapping[str, Any]) -> tuple[str, ...]:
    try:
        return check_namespace(namespace)
    except InvalidValue as error:
        raise ConfigurationError(
            f"The resolved namespace {namespace!r} is invalid: {error.message}", present=_present(values)
        ) from None
