"""The flight recorder's tests drive the recorder tests' fake API server (tests/recordings/rec_support.py,
tests/recordings/apiserver/) and wait on the TUI as its tests do (tests/tui/pilot_wait.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for helper in (HERE.parent / "recordings", HERE.parent / "tui"):
    if str(helper) not in sys.path:
        sys.path.append(str(helper))
