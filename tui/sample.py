"""The bundled sample a bare ``evictlens tui`` opens: the ``sidecar-stress`` scenario.

The bundled scenario (``recordings/scenarios/bundled/sidecar-stress.yaml``, read through
importlib.resources by :mod:`recordings.scenarios`) is generated closed-loop by
:func:`replay.scenario.run_scenario` into a recording in a cache directory, once per scenario
digest, and reused: a 1.30 kind worker whose native sidecar allocates until the kubelet evicts its pod.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SAMPLE_NAME = "sidecar-stress"


def cache_dir() -> Path:
    """``$EVICTLENS_CACHE``, else ``$XDG_CACHE_HOME/evictlens``, else ``~/.cache/evictlens`` (0700)."""
    env = os.environ.get("EVICTLENS_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evictlens"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return base


def _generator_stamp() -> str:
    """A hash of the code that generates scenarios: a newer evictlens never reuses an older generator's sample."""
    import hashlib

    import recordings.scenarios
    import replay.scenario

    digest = hashlib.sha256()
    files = [*sorted(Path(recordings.scenarios.__file__).parent.glob("*.py")), Path(replay.scenario.__file__)]
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()[:8]


def sample_recording(cache: Path | None = None) -> Path:
    """The sample's recording directory, generated on first use (atomically: never half a recording)."""
    from recordings.scenarios import load_bundled
    from replay.scenario import run_scenario

    root = cache or cache_dir()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    scenario = load_bundled(SAMPLE_NAME)
    out = root / f"sample-{SAMPLE_NAME}-{scenario.digest.split(':')[-1][:12]}-{_generator_stamp()}"
    if (out / "manifest.json").is_file():
        return out
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=root))
    try:
        run_scenario(scenario, tmp / "rec")
        if not out.exists():  # else another process built it meanwhile
            os.replace(tmp / "rec", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
