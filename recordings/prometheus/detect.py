"""Before importing: which nodes, which labels, which cluster — found in the data, never guessed.

Why a module: a scrape configuration that differs from the defaults does not fail, it gives a
confident wrong answer. kube-state-metrics scraped without ``honor_labels`` names every pod after
the exporter's own pod (one phantom pod that the replay then evicts); node-exporter keyed by
``IP:9100`` invents a node per address; two clusters behind one Thanos merge their nodes of the same
name. Each is detected here from a few cheap probes over the whole range, and either resolved
(with a note saying so) or refused in one line naming the flag that fixes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kube.errors import InputError

from .client import PrometheusClient, Series
from .labels import Conventions

NODE_LABELS = (
    "node",
    "instance",
    "kubernetes_node",
    "nodename",
    "node_name",
    "kubernetes_io_hostname",
    "hostname",
    "host",
    "exported_node",
    "exported_instance",
)
"""Labels scrape configurations put node names in, tried when a flag's label does not match."""

REPLICA_LABELS = frozenset(
    {
        "instance",
        "pod",
        "job",
        "endpoint",
        "service",
        "container",
        "namespace",
        "uid",
        "prometheus_replica",
        "replica",
        "__replica__",
        "receive_replica",
        "rule_replica",
        "kubelet_version",
        "kernel_version",
        "os_image",
        "container_runtime_version",
        "kubeproxy_version",
        "provider_id",
        "pod_cidr",
        "system_uuid",
        "internal_ip",
        "id",
        "device",
        "fstype",
        "mountpoint",
        "metrics_path",
        "boot_id",
        "machine_id",
    }
)
"""Labels that differ between series of one node without another cluster: HA scrapers and Thanos
replicas (deduplicated by ``max by``), the scrape target, a node re-created under the same name."""


@dataclass
class Discovery:
    """What the probes found: the conventions to use, the nodes, and notes for the manifest."""

    conventions: Conventions
    nodes: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Exporter:
    name: str  # for messages
    flag: str
    metric: str  # one series per node (or a few): cheap to read raw
    extra: str = ""  # a matcher narrowing the metric


def discover(
    client: PrometheusClient, conv: Conventions, start: float, end: float, step: float, iso: Callable[[float], str]
) -> Discovery:
    """Resolve kube-state-metrics' labels, check the node names of every exporter against each other and
    refuse several clusters merged; returns the nodes to import."""
    span = f"{max(1, round((end - start + step) * 1000))}ms"
    notes: list[str] = []
    conv = _ksm_labels(client, conv, span, end, notes)
    exporters = [
        (conv.ksm_node, _Exporter("kube-state-metrics kube_node_info", "--ksm-node-label", "kube_node_info")),
        (
            conv.kubelet_node,
            _Exporter("cAdvisor container_memory_working_set_bytes", "--cadvisor-node-label", "machine_memory_bytes"),
        ),
        (
            conv.node_exporter_node,
            _Exporter(
                "node-exporter node_filesystem_size_bytes",
                "--node-exporter-node-label",
                "node_filesystem_size_bytes",
                f'mountpoint="{conv.nodefs_mountpoint}"',
            ),
        ),
    ]
    raw = {e.flag: _raw(client, conv, e, span, end) for _label, e in exporters}
    _clusters(raw, exporters, conv)
    found: dict[str, set[str]] = {}
    for label, e in exporters:
        names = {s.labels[label] for s in raw[e.flag] if s.labels.get(label)}
        if e.flag == "--cadvisor-node-label":  # machine_memory_bytes may be dropped; the working set never is
            q = f"count by ({label}) (last_over_time(container_memory_working_set_bytes{conv.matchers(label)}[{span}]))"
            names |= {s.labels[label] for s in client.query(q, end) if s.labels.get(label)}
        found[e.flag] = names
    unlabelled = {e.flag for label, e in exporters if not found[e.flag] and raw[e.flag]}
    nodes = _reconcile(client, conv, exporters, found, unlabelled, span, end, notes)
    if conv.nodes:
        for n in conv.nodes:
            if not any(n in names for names in found.values()):
                raise InputError(
                    f"no series for this node between {iso(start)} and {iso(end)} "
                    f"(kube_node_info{{{conv.ksm_node}=…}}, "
                    f"container_memory_working_set_bytes{{{conv.kubelet_node}=…}}, "
                    f"node_filesystem_size_bytes{{{conv.node_exporter_node}=…}}); check the name and the label flags",
                    source=f"node {n}",
                )
        return Discovery(conv, sorted(conv.nodes), notes)
    if not nodes:
        tenant = next((v for k, v in client.options.headers.items() if k.lower() == "x-scope-orgid"), None)
        raise InputError(
            f"no data between {iso(start)} and {iso(end)}: none of kube_node_info, "
            "container_memory_working_set_bytes, node_filesystem_size_bytes has a series with a node label "
            + (
                f"for tenant {tenant!r} (X-Scope-OrgID: a wrong tenant reads as an empty one; check it)"
                if tenant
                else "(check --from/--to, --selector and the label flags)"
            ),
            source=f"query count by ({conv.ksm_node}) (kube_node_info{conv.matchers(conv.ksm_node)})",
        )
    return Discovery(conv, sorted(nodes), notes)


def _raw(client: PrometheusClient, conv: Conventions, e: _Exporter, span: str, end: float) -> list[Series]:
    return client.query(f"last_over_time({e.metric}{conv.matchers(None, e.extra)}[{span}])", end)


# -- kube-state-metrics' pod labels ----------------------------------------------------------------
def _ksm_labels(client: PrometheusClient, conv: Conventions, span: str, end: float, notes: list[str]) -> Conventions:
    """``exported_*`` when kube-state-metrics was scraped without honor_labels; an explicit flag whose
    label no series carries is refused (the reverse mismatch)."""
    sample = client.query(f"topk(50, last_over_time(kube_pod_info{conv.matchers(None)}[{span}]))", end)
    if not sample:
        return conv
    names = set().union(*(s.labels.keys() for s in sample))
    exported = "exported_pod" in names or "exported_namespace" in names
    for canon, flag in (("namespace", "--ksm-namespace-label"), ("pod", "--ksm-pod-label")):
        given = getattr(conv, f"ksm_{canon}")
        if given and given not in names:
            other = f"exported_{canon}" if exported else canon
            raise InputError(
                f"no kube_pod_info series has the label {given!r}; its pods' {canon} is in {other!r} "
                f"(kube-state-metrics scraped {'without' if exported else 'with'} honor_labels): "
                f"drop the flag or pass {flag} {other}",
                source=f"{flag} {given}",
            )
    changes: dict[str, str] = {}
    if exported and not conv.ksm_pod and not conv.ksm_namespace:
        notes.append(
            "kube-state-metrics was scraped without honor_labels: its pods' labels are exported_namespace/"
            "exported_pod/exported_container (namespace/pod/container name the exporter's own pod), "
            "read from those"
        )
        changes = {"ksm_namespace": "exported_namespace", "ksm_pod": "exported_pod"}
        if not conv.ksm_container:
            changes["ksm_container"] = "exported_container"
    node_alt = f"exported_{conv.ksm_node}"
    if node_alt in names:
        notes.append(
            f"kube-state-metrics' {conv.ksm_node} label was overwritten by the scrape target's: "
            f"the pods' node is read from {node_alt}"
        )
        changes["ksm_node"] = node_alt
    conv = dataclasses.replace(conv, **changes) if changes else conv  # type: ignore[arg-type]
    lab = conv.ksm_pod_labels
    pods = client.query(
        f"count by ({lab['namespace']}, {lab['pod']}) (last_over_time(kube_pod_info{conv.matchers(None)}[{span}]))",
        end,
    )
    uids = client.query(f"count(count by (uid) (last_over_time(kube_pod_info{conv.matchers(None)}[{span}])))", end)
    n_uids = int(uids[0].values[0]) if uids and len(uids[0]) else 0
    if len(pods) == 1 and n_uids > 1:
        only = pods[0].labels
        raise InputError(
            f"all {n_uids} pods (uids) of kube_pod_info are named {only.get(lab['namespace'], '')}/"
            f"{only.get(lab['pod'], '')} — the exporter's own pod, not theirs: pass the labels that hold them "
            "(--ksm-namespace-label, --ksm-pod-label, --ksm-container-label)",
            source=f"label {lab['pod']}",
        )
    return conv


def ksm_relabel(series: Sequence[Series], conv: Conventions) -> list[Series]:
    """kube-state-metrics series with the pod's namespace/pod/container (and node) under their usual
    names, whichever label the scrape left them in."""
    labels = ksm_labels([s.labels for s in series], conv)
    return [Series(lab, s.times, s.values) for lab, s in zip(labels, series, strict=True)]


def ksm_labels(labels: Sequence[Mapping[str, str]], conv: Conventions) -> list[Mapping[str, str]]:
    """:func:`ksm_relabel` of label sets alone (a :class:`Block`'s)."""
    lab = conv.ksm_pod_labels
    moved = {canon: label for canon, label in lab.items() if label != canon}
    if not moved:
        return list(labels)
    out: list[Mapping[str, str]] = []
    for old in labels:
        new = dict(old)
        for canon, label in moved.items():
            if label in new:
                new[canon] = new[label]
            elif label == f"exported_{canon}":  # this series had no collision: its own label is right
                continue
            else:
                new.pop(canon, None)
        out.append(new)
    return out


# -- node names ------------------------------------------------------------------------------------
def _reconcile(
    client: PrometheusClient,
    conv: Conventions,
    exporters: Sequence[tuple[str, _Exporter]],
    found: Mapping[str, set[str]],
    unlabelled: set[str],
    span: str,
    end: float,
    notes: list[str],
) -> set[str]:
    """The nodes: kube-state-metrics' names when it has any (else cAdvisor's, else node-exporter's); an
    exporter whose names share none of them is refused with the label that would match."""
    order = [e.flag for _l, e in exporters]
    ref_flag = next((f for f in order if found.get(f)), None)
    if ref_flag is None:
        return set()
    ref = found[ref_flag]
    ref_name = next(e.name for _l, e in exporters if e.flag == ref_flag)
    for label, e in exporters:
        names = found.get(e.flag, set())
        if e.flag == ref_flag or not (names or e.flag in unlabelled):
            continue
        if not names & ref:
            better = _label_matching(client, conv, e, label, ref, span, end)
            fix = (
                f"pass {e.flag} {better}"
                if better
                else f"relabel the scrape so a label holds the node name and pass {e.flag} LABEL"
            )
            said = f"names nodes by {label} as {_few(names)}, none of" if names else f"has no {label} label naming"
            raise InputError(f"{e.name} {said} the nodes {ref_name} names ({_few(ref)}): {fix}", source=e.flag)
        extra = names - ref
        if extra:
            notes.append(f"{e.name}: {label} values that are not nodes of {ref_name} ({_few(extra)}) were left out")
    return set(ref)


def _label_matching(
    client: PrometheusClient, conv: Conventions, e: _Exporter, current: str, ref: set[str], span: str, end: float
) -> str | None:
    for label in NODE_LABELS:
        if label == current:
            continue
        q = f"count by ({label}) (last_over_time({e.metric}{conv.matchers(None, e.extra)}[{span}]))"
        values = {s.labels.get(label, "") for s in client.query(q, end)}
        if values & ref:
            return label
    return None


def _few(names: Iterable[str], n: int = 3) -> str:
    items = sorted(names)
    more = f", … ({len(items)} in all)" if len(items) > n else ""
    return ", ".join(items[:n]) + more


# -- several clusters --------------------------------------------------------------------------------
def _clusters(
    raw: Mapping[str, Sequence[Series]], exporters: Sequence[tuple[str, _Exporter]], conv: Conventions
) -> None:
    """Refuse when one node name appears under different values of a label that is not a replica's or
    a target's: several clusters (or Prometheus servers) behind one endpoint, which max by (node)
    would merge into one node."""
    for label, e in exporters:
        series = [s.labels for s in raw.get(e.flag, ()) if s.labels.get(label)]
        by_node: dict[str, list[Mapping[str, str]]] = {}
        for ls in series:
            by_node.setdefault(ls[label], []).append(ls)
        differing: set[str] = set()
        shared = []
        for node, sets in sorted(by_node.items()):
            keys = set().union(*(ls.keys() for ls in sets)) - REPLICA_LABELS - {label, "__name__"}
            here = {k for k in keys if len({ls.get(k, "") for ls in sets}) > 1}
            if here:
                shared.append(node)
                differing |= here
        if not differing:
            continue
        names = sorted(differing)
        seen = sorted({", ".join(f'{k}="{ls.get(k, "")}"' for k in names) for ls in series})
        raise InputError(
            f"{len(shared)} node names ({_few(shared)}) appear in {len(seen)} clusters of {e.metric} "
            f"({'; '.join(seen)}): several clusters behind one endpoint would be merged into one; "
            f"pass --selector '{seen[0]}' (or another of them)",
            source="--selector" if conv.selector else "--prometheus",
        )
