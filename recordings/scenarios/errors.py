"""The one-line error of a bad scenario file: file, line and field, then what was expected."""

from __future__ import annotations

from kube.errors import RecordingError


class ScenarioError(RecordingError):
    """``sidecar.yaml: line 12: pods[0].usage.el9: no container 'el9' in pod alloc (containers: el1, el2)``.

    ``source`` is the scenario file (or the flag that named it), ``line`` 1-based."""
