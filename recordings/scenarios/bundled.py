"""The scenarios shipped with evictlens (``evictlens scenario --list`` / ``--sample NAME``).

They are package data (``recordings/scenarios/bundled/*.yaml``) read through importlib.resources,
so they work from a wheel as well as from a checkout.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

from .errors import ScenarioError
from .schema import Scenario, parse_scenario


def _files() -> dict[str, bytes]:
    folder = resources.files("recordings.scenarios").joinpath("bundled")
    return {e.name[:-5]: e.read_bytes() for e in folder.iterdir() if e.name.endswith(".yaml")}


def bundled_names() -> list[str]:
    return sorted(_files())


def bundled_text(name: str) -> bytes:
    files = _files()
    if name not in files:
        raise ScenarioError(f"no bundled scenario {name!r}; bundled: {', '.join(sorted(files))}", source="--sample")
    return files[name]


def load_bundled(name: str, *, kubelet_version: str | None = None, kubelet_flags: Sequence[str] = ()) -> Scenario:
    return parse_scenario(
        bundled_text(name),
        file=f"{name}.yaml (bundled)",
        base_dir=None,
        kubelet_version=kubelet_version,
        kubelet_flags=kubelet_flags,
    )


def list_bundled() -> list[tuple[str, str]]:
    """(name, first line of the description) of every bundled scenario."""
    out = []
    for name in bundled_names():
        scenario = load_bundled(name)
        out.append((name, scenario.description.splitlines()[0] if scenario.description else ""))
    return out
