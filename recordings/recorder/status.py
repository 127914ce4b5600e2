"""The recorder's progress display on stderr: a live line on a TTY, plain lines otherwise.

Users leave recorders running for hours; the line answers "is it still working, and how
much disk is it eating" at a glance, and the final summary gives the figures for a report.
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .. import format as fmt


@dataclass
class Counters:
    ticks: int = 0
    nodes_ok: int = 0
    nodes_failed: int = 0
    gaps: int = 0
    samples: int = 0
    late_ticks: int = 0
    pods_missed: int = 0  # --kubelet-direct: node ticks without a fresh /pods list (stale or missing)
    pods_failed: int = 0  # --kubelet-direct: /pods requests that failed or timed out
    started: float = field(default_factory=time.monotonic)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def human(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class StatusLine:
    def __init__(self, root: Path, mode: str, stream: TextIO | None = None, *, pods: bool = False) -> None:
        self.root = root
        self.pods = pods  # --kubelet-direct: show the /pods counters
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "live" if self.stream.isatty() else "plain"
        self.mode = mode
        self.counters = Counters()
        self._last_plain = 0.0
        self._cpu_at_first_tick: float | None = None
        self._live: Live | None = None
        if mode == "live":
            self._live = Live(Text(""), console=Console(file=self.stream), transient=True, auto_refresh=False)
            self._live.start()

    def text(self) -> str:
        c = self.counters
        elapsed = time.monotonic() - c.started
        size = fmt.dir_bytes(self.root)
        rate = size / elapsed if elapsed > 0 else 0.0
        hms = time.strftime("%H:%M:%S", time.gmtime(elapsed))
        pods = f"  pods missed {c.pods_missed} (failed fetches {c.pods_failed})" if self.pods else ""
        return (
            f"elapsed {hms}  ticks {c.ticks}  nodes ok {c.nodes_ok} failed {c.nodes_failed}  "
            f"gaps {c.gaps}{pods}  samples {c.samples}  disk {human(size)}  write {human(rate)}/s"
        )

    def tick_started(self) -> None:
        """Mark the start of ticking, so CPU per tick excludes imports and the initial lists."""
        if self._cpu_at_first_tick is None:
            self._cpu_at_first_tick = _cpu()

    def update(self) -> None:
        if self.mode == "none":
            return
        if self._live is not None:
            self._live.update(Text(self.text()), refresh=True)
            return
        now = time.monotonic()
        if now - self._last_plain >= 10.0 or self.counters.ticks <= 1:
            self._last_plain = now
            print(self.text(), file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the live line without a summary (nothing was recorded)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def finish(self, outcome: str) -> None:
        if self._live is not None:
            self._live.stop()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = _cpu()
        ticking = cpu - (self._cpu_at_first_tick if self._cpu_at_first_tick is not None else cpu)
        per_tick = ticking / self.counters.ticks * 1000 if self.counters.ticks else 0.0
        print(
            f"{outcome}: {self.text()}  late {self.counters.late_ticks}  "
            f"cpu {cpu:.1f}s ({per_tick:.0f} ms/tick)  peak rss {usage.ru_maxrss / 1024:.0f} MB",
            file=self.stream,
            flush=True,
        )
