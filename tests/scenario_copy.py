"""A scenario's recording as any recording: the tests that need the open-loop (counterfactual) answer on it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from replay.scenario import DOCUMENT, GENERATED_WITH


def without_scenario(rec: Path, out: Path) -> Path:
    """Copy ``rec`` to ``out`` without the scenario it keeps: nothing to regenerate, a replay reads it."""
    shutil.copytree(rec, out)
    manifest = json.loads((out / "manifest.json").read_text())
    for key in (DOCUMENT, GENERATED_WITH):
        del manifest["options"][key]
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out
