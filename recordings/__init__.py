"""evictlens recordings: the recording format, the live recorder and importers.

Data flows recordings → replay: nothing here imports ``replay``.  Entry points:
:func:`open_recording` to read, :class:`recordings.writer.RecordingWriter` to write,
:mod:`recordings.cli` for the ``record``/``import``/``pack``/``unpack``/``info`` commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kube.errors import RecordingError

if TYPE_CHECKING:
    from pathlib import Path

    from .reader import Recording

__all__ = ["RecordingError", "open_recording"]


def open_recording(path: str | Path) -> Recording:
    """Open a recording directory (imports polars lazily, so ``import recordings`` stays cheap)."""
    from .reader import open_recording as _open

    return _open(path)
