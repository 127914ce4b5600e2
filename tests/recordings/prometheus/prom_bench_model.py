"""The benchmark cluster: N nodes × P pods of two containers, as exporters expose them (by hand and tests).

One model serves both back-ends of ``bench_prom_import.py``: :func:`write_chunk` writes it as OpenMetrics
for ``promtool tsdb create-blocks-from openmetrics`` (a real Prometheus), and :mod:`prom_standin` answers
queries from it directly (the same series, labels and values), so the stand-in can be checked against
the real server at a small scale (``test_prom_standin.py``) and then run at 100 nodes × 24 h. Scrapes:
cAdvisor, the kubelet and node-exporter every 10 s, kube-state-metrics every 30 s, from ``T0`` on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

MI, GI = 1 << 20, 1 << 30
T0 = 1_763_000_000  # seconds, on a 2 h boundary
TICK = 10  # seconds between scrapes (kube-state-metrics: every third)
KSM_EVERY = 3

Series = tuple[dict[str, str], int, int, int, int]  # labels, node, pod, container, kind


def families(nodes: int, pods: int, node_range: range | None = None) -> dict[str, list[Series]]:
    """Family → its series (labels, node index, pod index, container index, value kind)."""
    fams: dict[str, list[Series]] = {}

    def add(fam: str, labels: dict[str, str], n: int, p: int = -1, c: int = -1, kind: int = 0) -> None:
        fams.setdefault(fam, []).append((labels, n, p, c, kind))

    for n in node_range if node_range is not None else range(nodes):
        node = f"node-{n:03d}"
        add("container_memory_working_set_bytes", {"node": node, "id": "/"}, n, kind=1)
        add("machine_memory_bytes", {"node": node}, n, kind=2)
        fs = {"instance": node, "mountpoint": "/", "device": "/dev/vda1", "fstype": "ext4"}
        add("node_filesystem_avail_bytes", fs, n, kind=3)
        add("node_filesystem_size_bytes", fs, n, kind=4)
        add("node_filesystem_files_free", fs, n, kind=5)
        add("node_filesystem_files", fs, n, kind=6)
        add("node_processes_max_processes", {"instance": node}, n, kind=7)
        add("node_processes_threads", {"instance": node}, n, kind=8)
        add("kube_node_info", {"node": node, "kubelet_version": "v1.30.4"}, n, kind=30)
        for res, unit in (("memory", "byte"), ("cpu", "core"), ("pods", "integer")):
            for what in ("capacity", "allocatable"):
                add(f"kube_node_status_{what}", {"node": node, "resource": res, "unit": unit}, n, kind=31)
        for cond in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            for st in ("true", "false"):
                add(
                    "kube_node_status_condition",
                    {"node": node, "condition": cond, "status": st},
                    n,
                    kind=32 if (cond == "Ready") == (st == "true") else 33,
                )
        for p in range(pods):
            pod = {"namespace": "default", "pod": f"app-{n}-{p}"}
            uid = f"00000000-0000-0000-{n:04d}-{p:012d}"
            add(
                "container_memory_working_set_bytes",
                {**pod, "node": node, "container": "", "id": f"/kubepods/pod{uid}"},
                n,
                p,
                kind=10,
            )
            add("kube_pod_info", {**pod, "node": node, "uid": uid, "priority_class": ""}, n, p, kind=30)
            owner = {"uid": uid, "owner_kind": "ReplicaSet", "owner_name": f"app-{n}", "owner_is_controller": "true"}
            add("kube_pod_owner", {**pod, **owner}, n, p, kind=30)
            for ph in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
                add("kube_pod_status_phase", {**pod, "uid": uid, "phase": ph}, n, p, kind=32 if ph == "Running" else 33)
            for rs in ("NodeLost", "Evicted", "UnexpectedAdmissionError"):
                add("kube_pod_status_reason", {**pod, "uid": uid, "reason": rs}, n, p, kind=33)
            for c, cname in enumerate(("app", "sidecar")):
                ctr = {**pod, "container": cname}
                add(
                    "container_memory_working_set_bytes",
                    {**ctr, "node": node, "id": f"/kubepods/pod{uid}/{cname}"},
                    n,
                    p,
                    c,
                    kind=11,
                )
                add("container_fs_usage_bytes", {**ctr, "node": node, "device": "/dev/vda1"}, n, p, c, kind=12)
                add("kubelet_container_log_filesystem_used_bytes", {**ctr, "node": node, "uid": uid}, n, p, c, kind=13)
                add("kube_pod_container_info", {**ctr, "uid": uid}, n, p, c, kind=30)
                req = {**ctr, "uid": uid, "node": node, "resource": "memory", "unit": "byte"}
                add("kube_pod_container_resource_requests", req, n, p, c, kind=34)
    return fams


def every(family: str) -> int:
    """Ticks between two scrapes of the family's exporter."""
    return KSM_EVERY if family.startswith("kube_") else 1


def value(kind: int, n: int, p: int, c: int, tick: int) -> int:
    """A series' value at a tick (whole numbers: exact as floats)."""
    wave = (tick * 7) % 360
    if kind == 1:
        return 6 * GI + wave * MI
    if kind == 2:
        return 32 * GI
    if kind in (3, 4):
        return (200 if kind == 4 else 120) * GI - (wave * MI if kind == 3 else 0)
    if kind in (5, 6):
        return 6_000_000 if kind == 6 else 5_000_000
    if kind == 7:
        return 4_194_304
    if kind == 8:
        return 900 + wave
    if kind == 10:
        return (40 + p) * MI + wave * 4096
    if kind == 11:
        return (20 + p + c) * MI + wave * 2048
    if kind == 12:
        return (5 + c) * MI
    if kind == 13:
        return (1 + p) * MI
    if kind == 31:
        return 32 * GI
    if kind == 34:
        return 64 * MI
    return 1 if kind in (30, 32) else 0


def _lab(d: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(d.items())) + "}"


def lines(nodes: int, pods: int, lo: int, hi: int, node_range: range | None = None) -> Iterator[str]:
    """OpenMetrics text of ticks [lo, hi), family by family (each family contiguous, as OpenMetrics wants)."""
    for fam, series in families(nodes, pods, node_range).items():
        yield f"# TYPE {fam} gauge\n"
        texts = [(_lab(labels), n, p, c, kind) for labels, n, p, c, kind in series]
        for tick in range(lo, hi):
            if tick % every(fam):
                continue
            ts = T0 + tick * TICK
            yield "".join(f"{fam}{lab} {value(kind, n, p, c, tick)} {ts}\n" for lab, n, p, c, kind in texts)


def write_chunk(path: Path, lo: int, hi: int, nodes: int, pods: int) -> int:
    """Ticks [lo, hi) of every series into ``path`` (OpenMetrics); returns the number of samples."""
    samples = 0
    with path.open("w", buffering=1 << 22) as fh:
        for text in lines(nodes, pods, lo, hi):
            fh.write(text)
            samples += text.count("\n") - text.startswith("#")
        fh.write("# EOF\n")
    return samples
