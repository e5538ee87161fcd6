"""`memory server status|list|stop`: what the thin client and the in-process `memory` both answer about servers."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from agent_memory.entrypoints.cli.places import InProcess, resolve_place, silence_seconds
from agent_memory.entrypoints.cli.server.protocol import server_directory


def manage_server(args: Any, env: Mapping[str, str]) -> int:
    """`memory server status|list|stop [--all|--everywhere]`: one JSON object on stdout, exit 0 (text with --format
    text)."""
    from agent_memory.entrypoints.cli.pump import server_list, server_status, stop_everywhere, stop_servers

    try:
        silence = silence_seconds(env)
    except InProcess as reason:
        sys.stderr.write(json.dumps({"error": str(reason), "code": "INVALID_INPUT"}, ensure_ascii=False) + "\n")
        return 1
    if args.server_command == "list" or getattr(args, "everywhere", False):
        if args.server_command == "list":
            servers = server_list(silence, server_directory(env))
            return _print_server_body({"servers": servers, "count": len(servers)}, args)
        return _print_server_body({"stopped": stop_everywhere(silence)}, args)
    try:
        place = resolve_place(args, env, honour_mode=False)
    except InProcess as reason:
        body: dict[str, Any] = {
            "error": f"No memory server can serve this data directory ({reason}), so commands run in-process: "
            "`memory server` has nothing to show or stop here.",
            "code": "INVALID_INPUT",
        }
        sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
        return 1
    if args.server_command == "status":
        body = server_status(place, silence)
    else:
        body = {"stopped": stop_servers(place, silence, everyone=args.all)}
    return _print_server_body(body, args)


def _print_server_body(body: dict[str, Any], args: Any) -> int:
    if getattr(args, "format", "json") != "text":
        sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
    elif "servers" in body:
        lines = [f"{body['count']} memory server{'' if body['count'] == 1 else 's'}"]
        for s in body["servers"]:
            lines.append(
                f"  pid {s['pid']}  {s['state']}  rss {s['rss_mb']} MB  clients {s.get('clients', '?')}  "
                f"idle {s.get('idle_for_seconds', '?')} s  stores open {len(s.get('stores') or [])}"
            )
            for store in s.get("stores") or []:
                where = store.get("chroma_host") or store.get("qdrant_url") or store.get("data_dir")
                lines.append(
                    f"    {store.get('backend')} of {where}  sessions {store.get('sessions')}  "
                    f"idle {store.get('idle_for_seconds')} s"
                )
        sys.stdout.write("\n".join(lines) + "\n")
    else:
        sys.stdout.write("\n".join(f"{key}: {value}" for key, value in body.items()) + "\n")
    return 0
