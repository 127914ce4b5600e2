"""The live tests use the recordings tests' fake API server and runners (tests/recordings/rec_support.py)."""

from __future__ import annotations

import sys
from pathlib import Path

RECORDINGS_TESTS = str(Path(__file__).resolve().parents[1] / "recordings")
if RECORDINGS_TESTS not in sys.path:
    sys.path.insert(0, RECORDINGS_TESTS)
