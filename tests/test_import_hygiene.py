"""Import rules: the core never imports the UI; recordings never import replay; the port imports only itself
and the base; the UI takes results from the engine, never its internals (docs/style.md)."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE_PACKAGES = ("kube", "replay", "recordings", "flight", "live")


def _modules() -> list[str]:
    names: list[str] = []
    for package in CORE_PACKAGES:
        names.append(package)
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            names.append(info.name)
    return sorted(names)


def test_core_packages_have_modules() -> None:
    modules = _modules()
    assert "replay.kubelet.manager" in modules
    assert "recordings.reader" in modules


def test_core_packages_are_the_real_ones_not_test_folders() -> None:
    import recordings
    import replay

    assert recordings.__file__ is not None and Path(recordings.__file__).parent == ROOT / "recordings"
    assert replay.__file__ is not None and Path(replay.__file__).parent == ROOT / "replay"


def test_importing_every_core_module_loads_neither_textual_nor_tui() -> None:
    script = (
        "import importlib, json, sys\n"
        f"for name in {_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui'))\n"
        "print(json.dumps(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


_FORBIDDEN = re.compile(
    r"^\s*(import\s+textual\b|from\s+textual\b|from\s+tui\b|import\s+tui\b|from\s+\.+tui\b)", re.MULTILINE
)


@pytest.mark.parametrize("package", CORE_PACKAGES)
def test_no_core_source_file_imports_the_ui(package: str) -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / package).rglob("*.py"))
        if _FORBIDDEN.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# -- the layering rules (docs/style.md, issue "one engine"), read from every import statement, at any depth ---
def _imports(package: str) -> dict[str, set[str]]:
    """Source file → the absolute module names it imports (``import x`` and ``from x import y``)."""
    import ast

    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def _first_party(name: str) -> bool:
    return name.split(".")[0] in ("kube", "replay", "recordings", "flight", "live", "tui")


BASE = "kube"
"""The small base every package shares (kube/): the error tree, Go durations, quantities, signal names."""


def test_recordings_never_import_replay_or_the_ui() -> None:
    offenders = {
        f: sorted(n for n in names if n.split(".")[0] in ("replay", "flight", "live", "tui"))
        for f, names in _imports("recordings").items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}


def test_the_port_imports_only_itself_and_the_base() -> None:
    port = {f: names for f, names in _imports("replay").items() if f.startswith("replay/kubelet/")}
    offenders = {
        f: sorted(n for n in names if _first_party(n) and not n.startswith(("replay.kubelet", BASE)))
        for f, names in port.items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}


ENGINE_INTERNALS = (
    "replay.fast",
    "replay.reference",
    "replay.collect",
    "replay.kubelet.manager",
    "replay.kubelet.ranking",
    "replay.kubelet.stats",
)
"""What only the engine uses: the UI takes finished results (replay.engine, replay.results, replay.views …)."""


def test_the_ui_takes_results_and_never_reaches_into_the_engine() -> None:
    offenders = {f: sorted(n for n in names if n.startswith(ENGINE_INTERNALS)) for f, names in _imports("tui").items()}
    assert {f: n for f, n in offenders.items() if n} == {}


def test_the_engine_has_one_entry_the_front_ends_use() -> None:
    """replay, whatif, explain --at and the TUI reach the columnar path only through replay.engine."""
    front_ends = {
        f: names
        for f, names in {**_imports("replay"), **_imports("tui")}.items()
        if f.startswith(("replay/cli/", "tui/")) or f in ("replay/moment.py", "replay/whatif.py")
    }
    offenders = {
        f: sorted(n for n in names if n.startswith(("replay.fast", "replay.reference", "replay.collect")))
        for f, names in front_ends.items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}


def test_the_base_imports_nothing_but_itself() -> None:
    offenders = {
        f: sorted(n for n in names if _first_party(n) and not n.startswith("kube"))
        for f, names in _imports("kube").items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}


def test_the_engine_never_imports_what_composes_it_with_the_recorder() -> None:
    """flight/ and live/ sit above recordings/ and replay/: neither of those imports them."""
    offenders = {
        f: sorted(n for n in names if n.split(".")[0] in ("flight", "live"))
        for f, names in {**_imports("replay"), **_imports("kube")}.items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}


def test_flight_and_live_reach_the_engine_only_through_its_entry() -> None:
    """The flight recorder and the live view use replay.engine (and results), never the columnar internals."""
    offenders = {
        f: sorted(n for n in names if n.startswith(("replay.reference", "replay.collect")))
        for f, names in {**_imports("flight"), **_imports("live")}.items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}
