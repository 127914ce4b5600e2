"""The port and the recorder never import the UI: no `textual`, nothing from `tui` (docs/style.md)."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE_PACKAGES = ("replay", "recordings")



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


_FORBIDDEN = re.compile(r"^\s*(import\s+textual\b|from\s+textual\b|from\s+tui\b|import\s+tui\b|from\s+\.+tui\b)",
                        re.MULTILINE)


@pytest.mark.parametrize("package", CORE_PACKAGES)
def test_no_core_source_file_imports_the_ui(package: str) -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / package).rglob("*.py"))
        if _FORBIDDEN.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
