"""What an extra adds to the default install, read from an environment that has it (no download, no new venv).

    python bench/extra_footprint.py [--extra rest] [--out FILE]

Walks the installed distributions' requirements from `agent-memory` with and without the extra (markers
evaluated for this interpreter), and sums the installed files (the RECORD of each) of the distributions only the
extra brings. Prints JSON. `bench/install_size.py` measures whole fresh installs instead; this is the quick
question of whether an extra is small enough to ship by default.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path

from packaging.requirements import Requirement


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


DISTRIBUTIONS = {_name(d.metadata["Name"]): d for d in metadata.distributions()}


def closure(root: str, extras: tuple[str, ...]) -> set[str]:
    """The installed distributions `root[extras]` requires, itself included."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    stack = [(root, extras)]
    while stack:
        name, wanted = stack.pop()
        name = _name(name)
        if (name, wanted) in seen or name not in DISTRIBUTIONS:
            continue
        seen.add((name, wanted))
        for line in DISTRIBUTIONS[name].requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": e}) for e in (wanted or ("",))):
                continue
            stack.append((requirement.name, tuple(sorted(requirement.extras))))
    return {name for name, _ in seen}


def installed_mib(name: str) -> float:
    total = 0
    for file in DISTRIBUTIONS[name].files or []:
        try:
            total += os.path.getsize(Path(str(DISTRIBUTIONS[name].locate_file(file))))
        except OSError:
            continue
    return total / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extra", default="rest")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    base, extended = closure("agent-memory", ()), closure("agent-memory", (args.extra,))
    added = sorted(extended - base)
    result = {
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        "extra": args.extra,
        "default_distributions": len(base),
        "default_mib": round(sum(installed_mib(n) for n in base), 1),
        "added_distributions": {n: round(installed_mib(n), 2) for n in added},
        "added_mib": round(sum(installed_mib(n) for n in added), 2),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
