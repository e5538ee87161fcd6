"""One small function per CLI command: argparse namespace in, the use case's Result as a JSON payload out."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.dispatch import commands, dispatch
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import MemoryView, StoreOutline
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.cli import text_format as text
from agent_memory.entrypoints.cli.parser import manifest_entry
from agent_memory.entrypoints.cli.progress_bar import progress_bar
from agent_memory.entrypoints.door_spec import DoorSpec
from agent_memory.entrypoints.door_spec import command_from as door_command_from
from agent_memory.entrypoints.json_codec import JSON, has_lone_surrogate
from agent_memory.entrypoints.page_views import listing_page_json

Payload = dict[str, Any]
Outcome = Result[Payload, DomainError]
Handler = Callable[[MemoryService, argparse.Namespace], Outcome]


def _read_stdin(what: str) -> Result[str, DomainError]:
    if sys.stdin is None or sys.stdin.isatty():
        return Failure(invalid_input(f"No {what} given: pass it as an argument or pipe it on stdin."))
    return _utf8(sys.stdin.read(), f"The {what} on stdin")


def _read_file(path: str) -> Result[str, DomainError]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return _utf8(handle.read(), path)
    except OSError as error:
        return Failure(invalid_input(f"Cannot read {path}: {error.strerror}."))


def _utf8(body: str, where: str) -> Result[str, DomainError]:
    """Text read as UTF-8 with surrogateescape: bytes that were not UTF-8 are an error, never stored or embedded."""
    if has_lone_surrogate(body):
        return Failure(invalid_input(f"{where} is not valid UTF-8: send text encoded as UTF-8."))
    return Success(body)


_C = TypeVar("_C", bound=c.Asks[Any])


def _labels(raw: str, kind: str) -> tuple[str, ...]:
    """--namespace user/u-123 as labels; a filter ignores empty ones (a trailing '/'), a place refuses them."""
    labels = tuple(raw.split("/"))
    return tuple(label for label in labels if label) if kind == "namespace_filter" else labels


def command_from(
    command: type[_C], name: str, args: argparse.Namespace, *, manifest: dict[str, Any] | None = None, **door: Any
) -> Result[_C, DomainError]:
    """The command of subcommand `name` from its parsed arguments, field by field as the manifest lists them, made
    by the doors' `door_spec.command_from` under the CLI's names: a field added to the command reaches it with no
    edit here. `door` holds values (by field) the handler worked out itself (content read from stdin, --clear-tags);
    an argument left unset keeps the command's default."""
    entry = manifest_entry(name, manifest)
    offered = [argument for argument in entry["arguments"] if argument["field"] is not None]
    spec = DoorSpec(
        name=name,
        command=command,
        names={argument["field"]: argument["name"].lstrip("-") for argument in offered},
        omit={
            attribute.name: "not among the subcommand's arguments"
            for attribute in command_fields(command)
            if attribute.name not in {argument["field"] for argument in offered}
            and attribute.name not in entry["common_fields"]
        },
    )
    values: dict[str, Any] = {}
    for argument in offered:
        value = getattr(args, argument["dest"], None)
        if value is None:
            continue
        if argument["kind"] == "list":
            value = tuple(value)
        elif argument["kind"].startswith("namespace"):
            value = _labels(value, argument["kind"])
        values[argument["field"]] = value
    for common in entry["common_fields"]:  # --store: before or after the subcommand, or not at all
        if getattr(args, common, None) is not None:
            values[common] = getattr(args, common)
    made = door_command_from(spec, {spec.door_name(field): value for field, value in {**values, **door}.items()})
    return cast(Result[_C, DomainError], made)  # the spec runs `command`: the command made is one


def _run(service: MemoryService, made: Result[Any, DomainError]) -> Result[Any, DomainError]:
    """The command the door made, through the table (a command the door could not make is its failure)."""
    return made.bind(lambda command: dispatch(service, command))


def create(service: MemoryService, args: argparse.Namespace) -> Outcome:
    if args.jsonl is not None:
        return _create_jsonl(service, args)
    content: Result[str, DomainError] = (
        Success(args.content) if args.content not in (None, "-") else _read_stdin("content")
    )
    return _run(service, content.bind(lambda text_: command_from(CreateMemory, "create", args, content=text_))).map(
        out.view_json
    )


def _create_jsonl(service: MemoryService, args: argparse.Namespace) -> Outcome:
    """Many memories in one batch: one JSON object per line with the fields of `create`; a bar on a terminal."""
    source = _read_stdin("JSON Lines") if args.jsonl == "-" else _read_file(args.jsonl)
    with progress_bar("create") as progress:
        return (
            source.bind(lambda body: _commands_from_jsonl(body, getattr(args, "store", None)))
            .bind(lambda commands: dispatch(service, c.CreateMemories(memories=tuple(commands), progress=progress)))
            .map(_batch_json)
        )


def _batch_json(views: list[MemoryView]) -> dict[str, Any]:
    """A batch's answer: each record's memory id in order (the existing memory's when it was skipped to or
    updated), and the records that repeated a memory of their scope, by number, with what was done."""
    body: dict[str, Any] = {"created": [v.memory.id for v in views], "count": len(views)}
    repeated = [
        {"record": number, **{key: value for key, value in out.view_json(view).items() if key in _REPEAT_KEYS}}
        for number, view in enumerate(views, start=1)
        if view.duplicates
    ]
    return body | {"duplicates": repeated} if repeated else body


_REPEAT_KEYS = ("id", "duplicates", "on_duplicate")


# a JSON Lines record holds CreateMemory's fields (`global` for global_), so a new field is accepted with no edit
_JSONL_FIELDS = {"global" if a.name == "global_" else a.name for a in command_fields(CreateMemory)}


# JSON escapes for the characters other tools (and str.splitlines) take for line breaks
_LINE_BREAKS_IN_TEXT = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def jsonl_line(item: dict[str, Any]) -> str:
    """One JSON Lines record: UTF-8 kept readable, but no character any reader could take for a line break."""
    return json.dumps(item, ensure_ascii=False).translate(_LINE_BREAKS_IN_TEXT)


def jsonl_records(body: str) -> list[tuple[int, str]]:
    """(line number, line) for every non-blank line; JSON Lines break on \\n only (\\r\\n tolerated)."""
    return [(number, line.removesuffix("\r")) for number, line in enumerate(body.split("\n"), start=1) if line.strip()]


def _commands_from_jsonl(body: str, store: str | None) -> Result[list[CreateMemory], DomainError]:
    commands: list[CreateMemory] = []
    for number, line in jsonl_records(body):
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            return Failure(invalid_input(f"Line {number} is not valid JSON: {error.msg}."))
        if has_lone_surrogate(item):
            return Failure(invalid_input(f"Line {number} holds a lone surrogate escape (\\ud800–\\udfff)."))
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            return Failure(invalid_input(f"Line {number} must be a JSON object with a 'content' string."))
        unknown = sorted(set(item) - _JSONL_FIELDS)
        if unknown:
            return Failure(invalid_input(f"Line {number} has unknown field(s) {', '.join(unknown)}."))
        try:
            fields = {("global_" if k == "global" else k): v for k, v in item.items()}
            fields.setdefault("store", store)
            for key in ("namespace", "tags", "citations"):
                if key in fields:
                    fields[key] = tuple(fields[key])
            commands.append(JSON.structure(fields, CreateMemory))
        except Exception as error:
            return Failure(invalid_input(f"Line {number} has a field of the wrong type: {error}."))
    if not commands:
        return Failure(invalid_input("The JSON Lines input holds no memories."))
    return Success(commands)


def add(service: MemoryService, args: argparse.Namespace) -> Outcome:
    content: Result[str, DomainError] = (
        Success(args.content) if args.content not in (None, "-") else _read_stdin("content")
    )
    return _run(service, content.bind(lambda text_: command_from(CreateMemory, "add", args, content=text_))).map(
        out.view_json
    )


def _answered(kind: type[c.Asks[Any]], name: str, render: Callable[[Any], Payload]) -> Handler:
    """The handler of a subcommand that is its command as it is: its flags build the command, `render` its answer."""

    def handle(service: MemoryService, args: argparse.Namespace) -> Outcome:
        return _run(service, command_from(kind, name, args)).map(render)

    return handle


def search(service: MemoryService, args: argparse.Namespace) -> Outcome:
    command = command_from(SearchMemories, "search", args)
    return _run(service, command).map(out.search_json)  # spec 000 fixes the shape: {"results", "count"}


def update(service: MemoryService, args: argparse.Namespace) -> Outcome:
    if (args.tags and args.clear_tags) or (args.citations and args.clear_citations):
        return Failure(invalid_input("Give new values or --clear-…, not both."))
    cleared: dict[str, Any] = {key: () for key in ("tags", "citations") if getattr(args, f"clear_{key}")}
    return _run(service, command_from(UpdateMemory, "update", args, **cleared)).map(out.view_json)


def listing(service: MemoryService, args: argparse.Namespace) -> Outcome:
    command = command_from(c.ListMemories, "list", args)
    return _run(service, command).map(lambda page: listing_page_json(page, args.limit, args.offset, compact=False))


def store(service: MemoryService, args: argparse.Namespace) -> Outcome:
    if args.store_command == "list":
        return dispatch(service, c.ListStores()).map(out.stores_json)
    created = _run(service, command_from(c.CreateStore, "store create", args))
    return created.map(lambda summary: {"name": summary.name, "memory_count": 0, "created": True})


def category(service: MemoryService, args: argparse.Namespace) -> Outcome:
    if args.category_command == "create":
        made = command_from(c.CreateCategory, "category create", args)
        return _run(service, made).map(out.category_json)
    if args.category_command == "describe":
        described = command_from(c.DescribeCategory, "category describe", args)
        return _run(service, described).map(out.category_json)
    deleted = _run(service, command_from(c.DeleteCategory, "category delete", args))
    return deleted.map(lambda summary: out.category_deleted_json(summary, purged=bool(args.purge)))


def export(service: MemoryService, args: argparse.Namespace) -> Outcome:
    """One `{"kind": "store", …}` line per store (its categories and descriptions), then one line per memory."""
    chosen = getattr(args, "store", None)
    lines = dispatch(service, c.ExportMemories(stores=None if chosen is None else (chosen,))).map(
        lambda exported: (
            [jsonl_line(_outline_json(o)) for o in exported.outlines],
            [jsonl_line(out.memory_json(m)) for m in exported.memories],
        )
    )
    readable = getattr(args, "format", "json") == "text"
    if args.output == "-":
        return lines.map(lambda parts: {"lines": parts[0] + parts[1], "text": readable})
    return lines.bind(lambda parts: _write_file(args.output, *parts))


def _outline_json(outline: StoreOutline) -> dict[str, Any]:
    return {"kind": STORE_LINE, "name": outline.name, "categories": dict(outline.categories)}


def _write_file(target: str, outlines: list[str], memories: list[str]) -> Outcome:
    try:
        with open(target, "w", encoding="utf-8") as handle:
            handle.writelines(line + "\n" for line in [*outlines, *memories])
    except OSError as error:
        return Failure(invalid_input(f"Cannot write {target}: {error.strerror}."))
    return Success({"lines": [], "exported": len(memories), "stores": len(outlines), "output": target})


def import_(service: MemoryService, args: argparse.Namespace) -> Outcome:
    body = _read_stdin("JSON Lines") if args.input == "-" else _read_file(args.input)
    target = getattr(args, "store", None)
    with progress_bar("import") as progress:
        return (
            body.bind(lambda text_: _records_from_jsonl(text_, target))
            .bind(
                lambda records: dispatch(
                    service,
                    c.ImportMemories(outlines=tuple(records[0]), memories=tuple(records[1]), progress=progress),
                )
            )
            .map(
                lambda report: {
                    "created": report.created,
                    "replaced": report.replaced,
                    "count": report.created + report.replaced,
                    "stores": report.stores,
                }
            )
        )


STORE_LINE = "store"  # the "kind" of an export line that outlines a store; memory lines carry no kind


def _records_from_jsonl(body: str, store: str | None) -> Result[tuple[list[StoreOutline], list[Memory]], DomainError]:
    """Every line parsed before anything is written: a bad line anywhere imports nothing."""
    outlines: dict[str, dict[str, str]] = {}
    memories: list[Memory] = []
    for number, line in jsonl_records(body):
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                return Failure(invalid_input(f"Line {number} is not a JSON object."))
            if has_lone_surrogate(item):
                return Failure(invalid_input(f"Line {number} holds a lone surrogate escape (\\ud800–\\udfff)."))
            if "kind" in item:
                outline = _outline_from(item, number)
                if isinstance(outline, Failure):
                    return outline
                name, categories = outline.unwrap()
                outlines.setdefault(store or name, {}).update(categories)
                continue
            if store is not None:
                item["store"] = store
            memories.append(JSON.structure(item, Memory))
        except json.JSONDecodeError as error:
            return Failure(invalid_input(f"Line {number} is not valid JSON: {error.msg}."))
        except Exception as error:
            return Failure(
                invalid_input(f"Line {number} is not a memory as `memory export` writes them: {_reason(error)}")
            )
    return Success(([StoreOutline(name, categories) for name, categories in outlines.items()], memories))


def _outline_from(item: dict[str, Any], number: int) -> Result[tuple[str, dict[str, str]], DomainError]:
    name, categories = item.get("name"), item.get("categories", {})
    if item.get("kind") != STORE_LINE or not isinstance(name, str) or not isinstance(categories, dict):
        return Failure(
            invalid_input(f'Line {number} must be {{"kind": "store", "name": …, "categories": {{path: description}}}}.')
        )
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in categories.items()):
        return Failure(invalid_input(f"Line {number}: every category path and description must be text."))
    return Success((name, categories))


def _reason(error: BaseException) -> str:
    inner = getattr(error, "exceptions", None)
    if inner:
        return _reason(inner[0])
    return str(error) or type(error).__name__


def reindex(service: MemoryService, args: argparse.Namespace) -> Outcome:
    """Re-embed a store, with a bar named after it on a terminal (a reindex of each store in turn shows each)."""
    name = getattr(args, "store", None) or service.policy.default_store
    with progress_bar(f"reindex {name}") as progress:
        made = command_from(c.ReindexStore, "reindex", args).map(lambda command: evolve(command, progress=progress))
        return _run(service, made).map(out.reindex_json)


def jsonl(payload: Payload) -> str:
    """export's output: one record per line on stdout (for people with --format text: each store and memory on a
    readable line, which `memory import` does not read), or a summary for --output (the file is always JSON Lines)."""
    if "output" in payload:
        summary = {key: payload[key] for key in ("exported", "stores", "output")}
        return json.dumps(summary, ensure_ascii=False)
    if payload.get("text"):
        return text.exported([json.loads(line) for line in payload["lines"]])
    return "\n".join(payload["lines"])


RAW_RENDERERS = {jsonl}


def _any_command(service: MemoryService, args: argparse.Namespace) -> Outcome:
    """A subcommand with no row below: the command its manifest entry (its spec) names, built from its flags, its
    answer's fields as the JSON (a table command no CliSpec presents, cli/manifest.table_specs, or a CliSpec of
    any name that needs no handler of its own). The command is found by its spec, never by the subcommand's name."""
    name = args.command
    kind = _command_of(manifest_entry(name))
    if kind is None:
        return Failure(invalid_input(f"`memory {name}` runs no command: add its row to cli/handlers.SUBCOMMANDS."))
    return _run(service, command_from(kind, name, args)).map(out.outcome_json)


def _command_of(entry: dict[str, Any]) -> type[c.Asks[Any]] | None:
    """The table's command a manifest entry names (by its class name), or None when it names none in the table."""
    return next((kind for kind in commands() if kind.__name__ == entry["command"]), None)


def handler_for(subcommand: str) -> tuple[Handler, Callable[[Payload], str]]:
    """The handler and text renderer of a subcommand: its own below, or the table's for a command with no CliSpec."""
    return SUBCOMMANDS.get(subcommand, (_any_command, text.generic))


SUBCOMMANDS: dict[str, tuple[Handler, Callable[[Payload], str]]] = {
    "create": (create, text.created),
    "add": (add, text.created),
    "search": (search, text.search),
    "get": (_answered(c.GetMemory, "get", out.view_json), text.memory),
    "reinforce": (_answered(c.ReinforceMemory, "reinforce", out.view_json), text.reinforced),
    "delete": (_answered(c.DeleteMemory, "delete", out.deleted_json), text.deleted),
    "restore": (_answered(c.RestoreMemory, "restore", out.view_json), text.restored),
    "remove": (_answered(c.RemoveMemory, "remove", out.removed_json), text.removed),
    "find-duplicates": (_answered(c.FindDuplicates, "find-duplicates", out.duplicates_json), text.generic),
    "update": (update, text.memory),
    "move": (_answered(c.MoveMemory, "move", out.view_json), text.memory),
    "list": (listing, text.listing),
    "recent": (_answered(c.RecentMemories, "recent", out.recent_json), text.recent),
    "prune": (_answered(c.PruneMemories, "prune", out.prune_json), text.prune),
    "reindex": (reindex, text.generic),
    "status": (_answered(c.StoreStatus, "status", out.status_json), text.status),
    "store": (store, text.generic),
    "category": (category, text.generic),
    "export": (export, jsonl),
    "import": (import_, text.generic),
}
