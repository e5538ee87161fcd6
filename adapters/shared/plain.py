"""Memory ⇄ plain dict, the one cattrs converter storage backends share: JSON/YAML-safe values, no nulls."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from cattrs import Converter
from cattrs.errors import BaseValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from agent_memory.adapters.shared.memory_fields import RENAMED
from agent_memory.adapters.shared.record_time import iso, parse_iso, required_iso
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath

Plain = dict[str, Any]

# The plain shape of a Memory: its fields in declaration order, `global_` spelled "global", tuples as lists,
# the path and timestamps as text and an absent one (or an absent number) as "" (store metadata cannot hold
# null), numbers as numbers, the decay policy as its value. Structuring is as strict as a hand-written reader: a
# value of the wrong type is a ValueError or TypeError (never coerced), a missing required key a KeyError, and
# the Memory validators still run.


def _text(raw: object, _type: object = str) -> str:
    if not isinstance(raw, str):
        raise TypeError(f"expected text, got {type(raw).__name__} {raw!r:.80}")
    return raw


def _flag(raw: object, _type: object = bool) -> bool:
    if not isinstance(raw, bool):
        raise TypeError(f"expected true/false, got {raw!r:.80}")
    return raw


def _strings(raw: object, _type: object = tuple) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise TypeError(f"expected a list of strings, got {raw!r:.80}")
    return tuple(raw)


def _path_text(path: MemoryPath | None) -> str:
    return "" if path is None else str(path)


def _path(raw: object, _type: object = MemoryPath) -> MemoryPath | None:
    """The path exactly as stored (not re-normalised); "" is none, a malformed one an InvalidValue."""
    text = _text(raw)
    return MemoryPath(tuple(text.split("/"))) if text else None


def _is_optional(wanted: type) -> Any:
    return lambda candidate: candidate == wanted | None


def _whole(raw: object, _type: object = int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(f"expected a whole number, got {raw!r:.80}")
    return raw


def _real(raw: object, _type: object = float) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise TypeError(f"expected a number, got {raw!r:.80}")
    return float(raw)


def _absent_as_text(value: object) -> object:
    """An optional number as stored: itself, or "" for none (as an absent path or timestamp)."""
    return "" if value is None else value


def _or_absent(read: Any) -> Any:
    return lambda raw, _type: None if raw == "" else read(raw)


def register_memory_shape(converter: Converter) -> Converter:
    """What every Memory format shares: tuples as lists, the decay policy as its value, `global_` spelled "global".

    The Memory functions are generated from the hooks registered so far: register a format's own first.
    """
    converter.register_unstructure_hook(tuple, list)
    converter.register_unstructure_hook(DecayPolicy, lambda policy: policy.value)
    converter.register_structure_hook(DecayPolicy, lambda raw, _t: DecayPolicy(raw))
    renames: dict[str, Any] = {name: override(rename=key) for name, key in RENAMED.items()}
    converter.register_unstructure_hook(Memory, make_dict_unstructure_fn(Memory, converter, **renames))
    converter.register_structure_hook(Memory, make_dict_structure_fn(Memory, converter, **renames))
    return converter


def make_converter() -> Converter:
    """A fresh plain converter: storage's own hooks, then the shared Memory shape."""
    converter = Converter(detailed_validation=False)  # the first bad value raises as itself, not in a group
    converter.register_unstructure_hook_func(_is_optional(MemoryPath), _path_text)
    converter.register_structure_hook_func(_is_optional(MemoryPath), _path)
    converter.register_unstructure_hook(datetime, iso)
    converter.register_unstructure_hook_func(_is_optional(datetime), iso)
    converter.register_structure_hook(datetime, lambda raw, _t: required_iso(raw))
    converter.register_structure_hook_func(_is_optional(datetime), lambda raw, _t: parse_iso(raw))
    converter.register_structure_hook(str, _text)
    converter.register_structure_hook(bool, _flag)
    converter.register_structure_hook_func(lambda candidate: candidate == tuple[str, ...], _strings)
    for number, read in ((int, _whole), (float, _real)):  # numbers are never coerced: not from text, not from bools
        converter.register_structure_hook(number, read)
        converter.register_unstructure_hook_func(_is_optional(number), _absent_as_text)
        converter.register_structure_hook_func(_is_optional(number), _or_absent(read))
    return register_memory_shape(converter)


PLAIN = make_converter()


def plain_memory(memory: Memory) -> Plain:
    """Every field of a memory as a plain value, in declaration order (see above for the shape)."""
    plain: Plain = PLAIN.unstructure(memory)
    return plain


def memory_from_plain(plain: Mapping[str, Any]) -> Memory:
    """The Memory a plain dict holds; ValueError/KeyError/TypeError when it does not hold one.

    Keys a Memory does not have are ignored; a missing key with a default takes the Memory's default.
    """
    try:
        memory: Memory = PLAIN.structure(plain, Memory)
    except BaseValidationError as error:  # not raised with detailed_validation off; kept to one error style
        raise ValueError(f"not a memory: {error}") from error
    return memory
