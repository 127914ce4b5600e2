"""Waiting in Pilot tests on what the screen shows or the app holds, with a generous deadline (no fixed sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot


async def until(pilot: Pilot[Any], condition: Callable[[], object], what: str, timeout: float = 120.0) -> None:
    """Let the app run (workers finish, messages are handled) until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:.0f} s for {what}")
        await pilot.pause(0.02)
