"""The progress bar of `memory create --jsonl`, `import` and `reindex`: one line on stderr, only for a terminal.

A person at a terminal sees `label [#####.....] done/total  percent  rate  ETA`, redrawn in place with \\r after each
slice the domain reports and ended with a newline. When stderr is not a terminal (an agent, a pipe, a file) nothing
is written, so the JSON contracts on stdout and stderr hold as they are. Through the local server the line reaches
the client's terminal as it is drawn (server/process.py streams a terminal's stderr).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

WIDTH = 24  # characters of the bar itself


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):
        return False


class ProgressBar:
    """A Progress (domain/views.py) that draws itself on a terminal; it never raises (a domain rule for Progress)."""

    def __init__(self, label: str, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.stream, self.clock = label, stream, clock
        self.started = clock()
        self.open = False  # a line is drawn and not yet ended with a newline
        self.drawn = 0  # the longest line drawn, so that a shorter one blanks its tail

    def __call__(self, done: int, total: int) -> None:
        line = self.line(done, total)
        self._write("\r" + line.ljust(self.drawn) + ("\n" if done >= total else ""))
        self.drawn = 0 if done >= total else max(self.drawn, len(line))
        self.open = done < total

    def line(self, done: int, total: int) -> str:
        """`label [####......]  done/total  percent  rate  ETA` (rate and ETA once any time has passed)."""
        share = done / total if total > 0 else 1.0
        filled = min(WIDTH, int(share * WIDTH))
        parts = [f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}]", f"{done:,}/{total:,}", f"{share:4.0%}"]
        elapsed = self.clock() - self.started
        if elapsed > 0 and done > 0:
            rate = done / elapsed
            parts.append(f"{rate:,.1f}/s")
            parts.append(f"ETA {_clock_time((total - done) / rate)}" if done < total else f"in {_clock_time(elapsed)}")
        return "  ".join(parts)

    def end(self) -> None:
        """End a line left open (the command stopped before its total): what follows starts on a line of its own."""
        if self.open:
            self._write("\n")
            self.open = False

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a terminal gone: the command goes on without its bar
            self.stream.write(text)
            self.stream.flush()


def _clock_time(seconds: float) -> str:
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _silent(_done: int, _total: int) -> None:
    return None


@contextlib.contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A bar on stderr while the block runs when stderr is a terminal (a line it leaves open is ended after it),
    else a Progress that says nothing."""
    stream = sys.stderr
    if not _is_terminal(stream):
        yield _silent
        return
    bar = ProgressBar(label, stream)
    try:
        yield bar
    finally:
        bar.end()
