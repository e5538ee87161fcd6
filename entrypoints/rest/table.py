"""The REST door's generic route: `POST /commands/{name}` runs any command of the table, its body the command's fields.

The routes of rest/memories.py and rest/admin.py present the product's commands in REST's own shapes; this one route
serves every command of the table (read per request: a command registered after start-up is served), so a command
added to the table is on REST with no edit here. It is an ordinary route: the token, the caller's namespace pin,
Host and Origin apply to it as to every other. Commands whose fields are records or callbacks are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Response, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields, command_name
from agent_memory.domain.dispatch import commands, dispatch
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.door_spec import DoorSpec, command_from
from agent_memory.entrypoints.rest.replies import Door, Payload, failures, no_route

# table commands this route does not run, each with its reason
NOT_ROUTED: Mapping[type[c.Asks[Any]], str] = {
    c.CreateMemories: "its memories are records: POST /memories creates one at a time",
    c.ExportMemories: "a whole-store dump is the operator's (`memory export`)",
    c.ImportMemories: "its memories and progress are records and a callback (`memory import`)",
}


def route_name(kind: type[c.Asks[Any]]) -> str:
    """The command's name in the route: CountMemories → count-memories."""
    return command_name(kind).replace("_", "-")


def routed() -> dict[str, type[c.Asks[Any]]]:
    """Every command this route runs, by its name in the route (read now)."""
    return {route_name(kind): kind for kind in commands() if kind not in NOT_ROUTED}


def door_spec(kind: type[c.Asks[Any]]) -> DoorSpec:
    """The route's spec of a command: its name in the route, every field by its name (`global` for global_)."""
    names = {"global_": "global"} if "global_" in {a.name for a in command_fields(kind)} else {}
    return DoorSpec(name=route_name(kind), command=kind, names=names)


@post("/commands/{name:str}", status_code=200, tags=["commands"], responses=failures(404, 409, 410, 422, 503))
async def run_command(
    name: FromPath[str], data: JSONBody[dict[str, Any]], door: NamedDependency[Door]
) -> Response[Payload]:
    """Run any command of the table by its name (e.g. `count-memories` for CountMemories), the body holding its
    fields; the answer is its result's fields as JSON."""
    kind = routed().get(name)
    if kind is None:
        return no_route(f"No command is called '{name}': the commands are {', '.join(sorted(routed()))}.")
    made = command_from(door_spec(kind), data)
    return await door.reply(lambda service: made.bind(lambda command: dispatch(service, command)), out.outcome_json)


TABLE_ROUTES = [run_command]
