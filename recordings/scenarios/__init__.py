"""Scenarios: node pressure described in YAML and generated as Summary API data, no cluster needed.

:func:`load_scenario` checks a file (one-line errors with file, line and field);
:class:`ScenarioRun` produces each tick's summaries and objects and takes the kubelet's
decisions back (closed loop). The replay side that drives it is ``replay.scenario``.
"""

from __future__ import annotations

from .bundled import bundled_names, bundled_text, list_bundled, load_bundled
from .errors import ScenarioError
from .generator import GeneratedTick, ObjectChange, ScenarioRun
from .schema import Scenario, load_scenario, parse_scenario

__all__ = [
    "GeneratedTick",
    "ObjectChange",
    "Scenario",
    "ScenarioError",
    "ScenarioRun",
    "bundled_names",
    "bundled_text",
    "list_bundled",
    "load_bundled",
    "load_scenario",
    "parse_scenario",
]
