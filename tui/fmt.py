"""Values as text on screen (integers stay integers in the model and in exports)."""

from __future__ import annotations

from datetime import datetime

from replay.replay_report import fmt_bytes
from replay.views import is_bytes


def fmt_signal_value(signal: str, value: int | None) -> str:
    if value is None:
        return "—"
    return fmt_bytes(value) if is_bytes(signal) else f"{value:,}"


def fmt_duration(seconds: float | None) -> str:
    if not seconds:
        return "—"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{sec:02d}s" if m else f"{sec}s"


def fmt_clock(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
