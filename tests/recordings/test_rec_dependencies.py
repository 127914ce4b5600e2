"""pyproject.toml declares every third-party distribution the core packages import.

The recorder imports ``httpx2`` (and ``msgspec``) directly; they used to arrive only as
lightkube's dependencies, so a lightkube release that dropped or renamed them would break
``evictlens record`` without any change here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ("kube", "recordings", "replay")


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for package in CORE:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in CORE and n != "tui"}


def _declared() -> set[str]:
    """The dependencies, plus the optional extras users install on purpose (``evictlens[ray]``), not ``test``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra, more in project.get("optional-dependencies", {}).items():
        if extra != "test":
            deps += more
    return {re.split(r"[\s\[<>=!~;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_every_third_party_import_of_the_core_packages_is_a_declared_dependency() -> None:
    providers = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = {}
    for module in sorted(_imported_top_levels()):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
        if not dists & declared:
            missing[module] = sorted(dists)
    assert not missing, f"imported but not declared in [project].dependencies: {missing}"


def test_the_recorder_http_client_is_declared_with_http2() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.replace(" ", "").startswith("httpx2[http2]") for d in deps)
