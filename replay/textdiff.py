"""Character-level differences between two event messages, marked inline.

``[-old-]{+new+}`` as ``git diff --word-diff`` prints it, at character granularity: eviction
messages differ in a container sentence or a quantity, and the reader wants to see exactly where.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Literal

Segment = tuple[Literal["same", "old", "new"], str]


def diff_segments(old: str, new: str) -> list[Segment]:
    """The two texts as runs of common, removed and added characters, in order."""
    out: list[Segment] = []
    for op, a1, a2, b1, b2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", old[a1:a2]))
            continue
        if a2 > a1:
            out.append(("old", old[a1:a2]))
        if b2 > b1:
            out.append(("new", new[b1:b2]))
    return out


def inline_diff(old: str, new: str) -> str:
    """``old`` turned into ``new`` with ``[-removed-]`` and ``{+added+}`` marks."""
    marks = {"same": "{}", "old": "[-{}-]", "new": "{{+{}+}}"}
    return "".join(marks[kind].format(text) for kind, text in diff_segments(old, new))
