"""Transitional alias: the error tree lives in :mod:`recordings.errors` (removed at the end of the migration)."""

from recordings.errors import EvictlensError, InputError, RecordingError

__all__ = ["EvictlensError", "InputError", "RecordingError"]
