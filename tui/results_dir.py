"""Opening a results directory lazily: ``result.json`` and the small frames now, the signals as a scan.

A 100-node day holds millions of signal rows; the overview aggregates a scan of them and the
timeline filters one node, so nothing waits for the whole frame (replay.results_io.load with
``signals=False`` plus ``signals_scan``).
"""

from __future__ import annotations

from pathlib import Path

from replay.results_io import load, signals_scan
from tui.results_view import ResultsView


def open_results_dir(path: str | Path, label: str | None = None) -> ResultsView:
    """A results directory as a :class:`ResultsView` whose signals are not read yet."""
    root = Path(path)
    result = load(root, signals=False)
    name = label or str(result.settings.get("label") or root.name)
    return ResultsView(name, result, signals_scan(root), str(root))
