"""YAML with line numbers: the document as plain Python values, plus where each value was written.

``yaml.safe_load`` forgets positions, so a bad field could only be named, not located. Here the
document is composed into PyYAML's node tree once, constructed with the safe constructor (so the
values are exactly what ``safe_load`` gives), and the same tree is walked to map every path
(``("pods", 0, "usage", "el1", "memory")``) to the line of its value and of its key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from kube.errors import InputError

from ..yamlsafe import check_aliases
from .errors import ScenarioError

Path = tuple[str | int, ...]


@dataclass
class Located:
    """A parsed document and the 1-based line of every value (``value_lines``) and mapping key."""

    file: str
    data: Any
    value_lines: dict[Path, int] = field(default_factory=dict)
    key_lines: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path, *, key: bool = False) -> int | None:
        """The line of ``path`` (its key's line when ``key``), else of its nearest located ancestor."""
        p = tuple(path)
        while True:
            found = (self.key_lines.get(p) if key else None) or self.value_lines.get(p)
            if found is not None or not p:
                return found
            p = p[:-1]

    def error(self, problem: str, path: Path, *, key: bool = False) -> ScenarioError:
        return ScenarioError(problem, source=self.file, line=self.line(path, key=key), field=dotted(path) or None)


def dotted(path: Path) -> str:
    """``("pods", 0, "usage")`` → ``pods[0].usage``."""
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else str(step)
    return out


def load_yaml(text: str, file: str) -> Located:
    """Parse one YAML (or JSON) document; a syntax error is one line with its position."""
    try:
        loader = yaml.SafeLoader(text)  # the reader refuses NUL and other control bytes here already
    except yaml.YAMLError as exc:
        raise ScenarioError(f"not valid YAML ({exc})", source=file) from None
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError("empty file; expected a scenario (see recordings/SCENARIOS.md)", source=file)
        try:
            check_aliases(node, file)  # before building and walking it: an alias bomb is one line
        except InputError as exc:
            raise ScenarioError(exc.problem, source=file) from None
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ScenarioError(f"not valid YAML ({exc.problem or exc.context})", source=file, line=line) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"not valid YAML ({exc})", source=file) from None
    finally:
        loader.dispose()
    doc = Located(file, data)
    _walk(node, (), doc, set())
    return doc


def _walk(node: yaml.Node, path: Path, doc: Located, seen: set[int]) -> None:
    doc.value_lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:  # an alias of a node already walked (anchors may nest)
        return
    seen = seen | {id(node)}
    if isinstance(node, yaml.MappingNode):
        # construct_document has already flattened merge keys (<<) into node.value
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            step: Path = (*path, key_node.value)
            doc.key_lines.setdefault(step, key_node.start_mark.line + 1)
            _walk(value_node, step, doc, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), doc, seen)
