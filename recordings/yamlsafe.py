"""YAML aliases counted before a document is built: a 377-byte "billion laughs" must be one line, not 3 GB.

PyYAML builds an alias as a shared reference, so loading is cheap; what explodes is every walk after it (a
scenario's field walk, orjson when the document is stored, a ranking over pods) that treats the document as
the tree it stands for. The composed node graph says how large that tree is without building it: each node's
expanded size is one plus its children's, memoised per node, so counting is linear in the text. A document
whose aliases add more than :data:`MAX_ALIAS_NODES` nodes is refused; Kubernetes objects written by kubectl or
the kubelet have no aliases at all, and hand-written files use a few.
"""

from __future__ import annotations

import yaml

from kube.errors import InputError

MAX_ALIAS_NODES = 100_000
"""Nodes the aliases of one document may add to it (the expanded tree minus the distinct nodes)."""


def expanded_size(root: yaml.Node) -> tuple[int, int]:
    """(nodes of the tree the document stands for, distinct nodes in its graph); iterative, so deep is fine."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        kids = _children(node)
        if children_done:
            sizes[id(node)] = 1 + sum(sizes.get(id(k), 0) for k in kids)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)], len(sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_aliases(root: yaml.Node, source: str) -> None:
    """An :class:`InputError` naming ``source`` when the document's aliases expand past the bound."""
    expanded, distinct = expanded_size(root)
    if expanded - distinct > MAX_ALIAS_NODES:
        raise InputError(
            f"its YAML aliases expand {distinct:,} nodes to {expanded:,}, more than {MAX_ALIAS_NODES:,} added "
            "nodes allowed (an alias bomb?); write the repeated parts out or use fewer aliases",
            source=source,
        )
