"""Which label carries what, per exporter: kube-prometheus-stack's conventions by default.

Why a module: the same series get different labels depending on how Prometheus scraped them, and
every query has to name the node the same way the scrape configuration did. The defaults are what
the most common install (prometheus-community/helm-charts, chart kube-prometheus-stack) produces:

* kubelet and cAdvisor (``/metrics``, ``/metrics/cadvisor``, ``/metrics/resource``): the operator's
  ServiceMonitor over the kubelet Endpoints object it maintains, whose addresses point at Node
  objects, so every series gets ``node`` (prometheus-operator's generated relabelling
  ``__meta_kubernetes_endpoint_address_target_name`` → ``node`` when the target kind is Node);
* node-exporter: the chart's ServiceMonitor relabels ``__meta_kubernetes_pod_node_name`` into
  ``instance`` (charts/prometheus-node-exporter values ``prometheus.monitor.relabelings``,
  kube-prometheus' nodeExporter ServiceMonitor), so ``instance`` is the node name;
* kube-state-metrics: scraped with ``honorLabels: true``; its own ``node`` label on ``kube_pod_info``
  and ``kube_node_*``, ``namespace``/``pod`` on pod series. Scraped without it (a plain
  ``kubernetes_sd`` job, many ServiceMonitors) the target's own ``namespace``/``pod``/``container``
  win and the pod's move to ``exported_*``: :mod:`.detect` finds that per series.

Each is a flag (``--cadvisor-node-label``, ``--node-exporter-node-label``, ``--ksm-node-label``) and
``--selector`` adds matchers to every query (``cluster="prod"`` on a multi-cluster Thanos).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kube.errors import InputError

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$')


@dataclass(frozen=True)
class Conventions:
    """Label names per exporter plus the user's extra matchers and filesystem mount points."""

    kubelet_node: str = "node"  # cAdvisor, kubelet /metrics and /metrics/resource
    node_exporter_node: str = "instance"
    ksm_node: str = "node"
    # kube-state-metrics' pod labels (None: detected; exported_* when scraped without honor_labels)
    ksm_namespace: str | None = None
    ksm_pod: str | None = None
    ksm_container: str | None = None
    nodefs_mountpoint: str = "/"
    imagefs_mountpoint: str = "/var/lib/containerd"
    selector: tuple[str, ...] = field(default_factory=tuple)  # each 'name="value"' (or =~ != !~)
    nodes: tuple[str, ...] = field(default_factory=tuple)  # --node: restrict every query to these

    def __post_init__(self) -> None:
        for flag, name in (
            ("--cadvisor-node-label", self.kubelet_node),
            ("--node-exporter-node-label", self.node_exporter_node),
            ("--ksm-node-label", self.ksm_node),
            ("--ksm-namespace-label", self.ksm_namespace or "namespace"),
            ("--ksm-pod-label", self.ksm_pod or "pod"),
            ("--ksm-container-label", self.ksm_container or "container"),
        ):
            if not _LABEL.match(name):
                raise InputError(f"not a Prometheus label name: {name!r}", source=flag)

    @property
    def ksm_pod_labels(self) -> dict[str, str]:
        """Canonical name → the label kube-state-metrics' pod series carry it in."""
        return {
            "namespace": self.ksm_namespace or "namespace",
            "pod": self.ksm_pod or "pod",
            "container": self.ksm_container or "container",
        }

    def matchers(self, node_label: str | None, *extra: str) -> str:
        """``{extra…, selector…, node=~"a|b"}`` for one exporter (node_label None: no node filter)."""
        parts = [m for m in extra if m]
        parts += list(self.selector)
        if node_label and self.nodes:
            parts.append(f'{node_label}=~"{"|".join(regex_literal(n) for n in self.nodes)}"')
        return "{" + ", ".join(parts) + "}"


def regex_literal(text: str) -> str:
    """``text`` as an RE2 literal inside a PromQL double-quoted string (``.`` → ``\\\\.``)."""
    return "".join("\\\\" + ch if ch in r".^$*+?()[]{}|\\" else ch.replace('"', '\\"') for ch in text)


def parse_selector(values: Iterable[str]) -> tuple[str, ...]:
    """``--selector 'cluster="prod",env=~"p.*"'`` (repeatable) → checked matchers."""
    out: list[str] = []
    for value in values:
        for part in _split_matchers(value):
            if not _MATCHER.match(part):
                raise InputError(
                    f'expected label matchers such as cluster="prod" or env=~"p.*", got {part.strip()!r}',
                    source="--selector",
                )
            out.append(part.strip())
    return tuple(out)


def _split_matchers(text: str) -> list[str]:
    """Split on commas outside quotes (a regex value may hold commas)."""
    parts, cur, quoted, escaped = [], [], False, False
    for ch in text.strip().strip("{}"):
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\":
            cur.append(ch)
            escaped = True
        elif ch == '"':
            cur.append(ch)
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p for p in parts if p.strip()]
