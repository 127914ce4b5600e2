"""A real Prometheus on loopback holding a known scenario: recording → OpenMetrics → promtool → server.

The OpenMetrics text is what the exporters would have served at each tick of the scenario's recording:
cAdvisor (``container_memory_working_set_bytes``, ``machine_memory_bytes``, ``container_fs_usage_bytes``,
the kubepods cgroup's limit), the kubelet (``kubelet_container_log_filesystem_used_bytes``),
node-exporter (filesystems, processes) and kube-state-metrics (pods, owners, requests/limits, phases,
reasons, nodes), labelled as kube-prometheus-stack labels them (``node`` on kubelet series, ``instance``
= node name on node-exporter series).
"""

from __future__ import annotations

import contextlib
import math
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.scenario import run_scenario

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
MISSING = (
    "needs the prometheus and promtool binaries (Debian: apt-get install prometheus; .ci/run installs them as root)"
)
IMAGEFS_MOUNT = "/var/lib/containerd"
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
REASONS = ("NodeLost", "Evicted", "UnexpectedAdmissionError")


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


@dataclass(frozen=True)
class Variant:
    """One way a real setup labels and scrapes the same cluster (several can share one server, told
    apart by ``extra`` labels and imported with ``--selector``).

    ``ksm_exported``: kube-state-metrics scraped without honor_labels (the target's namespace/pod/
    container win, the pod's move to ``exported_*``). ``node_exporter_by_ip``: node-exporter's
    ``instance`` is ``IP:9100`` and the node name is in ``kubernetes_node``. ``cadvisor_by_ip``: a plain
    ``role: node`` job — ``instance`` is ``IP:10250``, the name in ``kubernetes_io_hostname`` (labelmap of
    the node's labels), no ``node``. ``interval`` / ``ksm_interval``: seconds between scrapes (the
    recording's tick at or before each scrape is what it saw). ``nan_at``: (node, tick) whose root
    cgroup working set is exposed as NaN."""

    extra: tuple[tuple[str, str], ...] = ()
    ksm_exported: bool = False
    node_exporter_by_ip: bool = False
    cadvisor_by_ip: bool = False
    interval: float | None = None
    ksm_interval: float | None = None
    nan_at: tuple[str, int] | None = None


KSM_TARGET = {
    "namespace": "monitoring",
    "pod": "kube-state-metrics-6d8f7b9c4-x2x7q",
    "container": "kube-state-metrics",
    "instance": "10.244.1.7:8080",
    "job": "kube-state-metrics",
}


class _Families:
    """Samples grouped by family then series (OpenMetrics wants each family contiguous)."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, list[tuple[float, float]]]] = {}
        self.variant = Variant()
        self.node_ip: dict[str, str] = {}
        self.nan_now = False

    def add(self, name: str, labels: dict[str, str], t: float, value: float | None) -> None:
        if value is None:
            return
        labels, value = self._shape(name, dict(labels), value)
        self.data.setdefault(name, {}).setdefault(_labels(labels), []).append((t, value))

    def _shape(self, name: str, labels: dict[str, str], value: float) -> tuple[dict[str, str], float]:
        v = self.variant
        labels.update(dict(v.extra))
        if name.startswith("kube_") and v.ksm_exported:
            for k, target in KSM_TARGET.items():
                if k in labels:
                    labels[f"exported_{k}"] = labels[k]
                labels[k] = target
        if name.startswith("node_") and "instance" in labels and v.node_exporter_by_ip:
            node = labels["instance"]
            labels["kubernetes_node"] = node
            labels["instance"] = f"{self._ip(node)}:9100"
        if (name.startswith(("container_", "machine_", "kubelet_"))) and "node" in labels and v.cadvisor_by_ip:
            node = labels.pop("node")
            labels["kubernetes_io_hostname"] = node
            labels["instance"] = f"{self._ip(node)}:10250"
        if self.nan_now and name == "container_memory_working_set_bytes" and labels.get("id") == "/":
            value = math.nan
        return labels, value

    def _ip(self, node: str) -> str:
        return self.node_ip.setdefault(node, f"10.0.0.{len(self.node_ip) + 11}")

    def write(self, path: Path) -> None:
        with path.open("w") as fh:
            for name, series in self.data.items():
                fh.write(f"# TYPE {name} gauge\n")
                for labels, samples in series.items():
                    for t, v in sorted(samples):
                        text = "NaN" if math.isnan(v) else str(int(v)) if float(v).is_integer() else repr(v)
                        fh.write(f"{name}{labels} {text} {t:.3f}\n")
            fh.write("# EOF\n")


def _qty_bytes(text: str) -> float:
    units = {
        "Ki": 1 << 10,
        "Mi": 1 << 20,
        "Gi": 1 << 30,
        "Ti": 1 << 40,
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "m": 1e-3,
    }
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix]
    return float(text)


def openmetrics_from_recording(
    rec_path: Path,
    out: Path,
    *,
    chart_drops: bool = False,
    every: int = 1,
    variants: tuple[Variant, ...] = (Variant(),),
) -> dict[str, Any]:
    """Write the exporters' view of a recording; returns the side files an SRE would pass
    (configz per node, events, priority classes) as Python objects.

    ``chart_drops``: as kube-prometheus-stack's default cAdvisorMetricRelabelings leave it — no cgroup
    series without a pod label (the root and kubepods cgroups), no ``container_spec_*`` — with
    node-exporter's meminfo instead. ``every``: scrape every N-th tick only (a scrape interval N times the
    kubelet's loop). ``variants``: the same cluster as each of several setups (see :class:`Variant`)."""
    rec = open_recording(rec_path)
    fam = _Families()
    classes: dict[str, int] = {}
    for variant in variants:
        fam.variant = variant
        for node in rec.nodes():
            ticks = list(rec.ticks(node))
            origin = ticks[0].time.timestamp() if ticks else 0.0
            for i, tick in enumerate(ticks):
                if tick.index % every:
                    continue
                t = tick.time.timestamp()
                t_next = ticks[i + 1].time.timestamp() if i + 1 < len(ticks) else t + 10.0
                fam.nan_now = variant.nan_at == (node, tick.index)
                for at in _scrapes(origin, t, t_next, variant.interval):
                    if tick.ok:
                        _summary(fam, rec.summary_at(node, tick.index) or {}, node, at, chart_drops)
                for at in _scrapes(origin, t, t_next, variant.ksm_interval or variant.interval):
                    for pod in rec.pods_at(node, tick.time):
                        _pod(fam, pod, node, at, classes)
                    obj = rec.node_object_at(node, tick.time)
                    if obj:
                        _node(fam, obj, node, at)
                fam.nan_now = False
    fam.write(out)
    return {
        "configz": {n: rec.configz(n) for n in rec.nodes() if rec.configz(n)},
        "events": {"apiVersion": "v1", "kind": "List", "items": rec.events()},
        "priority_classes": {"items": [{"metadata": {"name": c}, "value": v} for c, v in sorted(classes.items())]},
    }


def _scrapes(origin: float, t: float, t_next: float, interval: float | None) -> list[float]:
    """The scrape times in [t, t_next) of a scrape every ``interval`` seconds from ``origin`` (None: t)."""
    if interval is None:
        return [t]
    first = origin + math.ceil((t - origin) / interval - 1e-9) * interval
    out = []
    while first < t_next - 1e-9:
        out.append(first)
        first += interval
    return out


def _summary(fam: _Families, s: dict[str, Any], node: str, t: float, chart_drops: bool) -> None:
    n = s.get("node") or {}
    k = {"node": node}
    mem = n.get("memory") or {}
    if chart_drops and mem.get("workingSetBytes") is not None and mem.get("availableBytes") is not None:
        total = mem["availableBytes"] + mem["workingSetBytes"]
        fam.add("node_memory_MemTotal_bytes", {"instance": node}, t, total)
        fam.add("node_memory_MemFree_bytes", {"instance": node}, t, mem["availableBytes"])
        fam.add("node_memory_Inactive_file_bytes", {"instance": node}, t, 0)
    elif mem.get("workingSetBytes") is not None:
        fam.add("container_memory_working_set_bytes", {**k, "id": "/"}, t, mem["workingSetBytes"])
        if mem.get("availableBytes") is not None:
            fam.add("machine_memory_bytes", k, t, mem["availableBytes"] + mem["workingSetBytes"])
    for sc in [] if chart_drops else n.get("systemContainers") or []:
        m = sc.get("memory") or {}
        if sc.get("name") == "pods" and m.get("workingSetBytes") is not None:
            fam.add("container_memory_working_set_bytes", {**k, "id": "/kubepods"}, t, m["workingSetBytes"])
            if m.get("availableBytes") is not None:
                fam.add(
                    "container_spec_memory_limit_bytes",
                    {**k, "id": "/kubepods"},
                    t,
                    m["availableBytes"] + m["workingSetBytes"],
                )
    e = {"instance": node}
    fs = n.get("fs") or {}
    image = (n.get("runtime") or {}).get("imageFs") or {}
    mounts = [("/", fs)]
    if image and (image.get("capacityBytes"), image.get("availableBytes")) != (
        fs.get("capacityBytes"),
        fs.get("availableBytes"),
    ):
        mounts.append((IMAGEFS_MOUNT, image))
    for mount, f in mounts:
        lab = {**e, "mountpoint": mount, "device": "/dev/vda1" if mount == "/" else "/dev/vdb1", "fstype": "ext4"}
        fam.add("node_filesystem_avail_bytes", lab, t, f.get("availableBytes"))
        fam.add("node_filesystem_size_bytes", lab, t, f.get("capacityBytes"))
        fam.add("node_filesystem_files_free", lab, t, f.get("inodesFree"))
        fam.add("node_filesystem_files", lab, t, f.get("inodes"))
    rl = n.get("rlimit") or {}
    fam.add("node_processes_max_processes", e, t, rl.get("maxpid"))
    fam.add("node_processes_threads", e, t, rl.get("curproc"))
    for p in s.get("pods") or []:
        ref = p.get("podRef") or {}
        pk = {**k, "namespace": ref.get("namespace", ""), "pod": ref.get("name", "")}
        ws = (p.get("memory") or {}).get("workingSetBytes")
        fam.add(
            "container_memory_working_set_bytes", {**pk, "container": "", "id": f"/kubepods/pod{ref.get('uid')}"}, t, ws
        )
        for c in p.get("containers") or []:
            ck = {**pk, "container": c["name"]}
            fam.add(
                "container_memory_working_set_bytes",
                {**ck, "id": f"/kubepods/pod{ref.get('uid')}/{c['name']}"},
                t,
                (c.get("memory") or {}).get("workingSetBytes"),
            )
            fam.add(
                "container_fs_usage_bytes", {**ck, "device": "/dev/vda1"}, t, (c.get("rootfs") or {}).get("usedBytes")
            )
            fam.add(
                "kubelet_container_log_filesystem_used_bytes",
                {**ck, "uid": ref.get("uid", "")},
                t,
                (c.get("logs") or {}).get("usedBytes"),
            )


def _pod(fam: _Families, pod: dict[str, Any], node: str, t: float, classes: dict[str, int]) -> None:
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    pk = {"namespace": meta.get("namespace", ""), "pod": meta.get("name", ""), "uid": meta.get("uid", "")}
    cls = spec.get("priorityClassName") or ""
    if cls and spec.get("priority") is not None:
        classes[cls] = spec["priority"]
    fam.add("kube_pod_info", {**pk, "node": node, "priority_class": cls, "host_ip": "10.0.0.1"}, t, 1)
    owners = meta.get("ownerReferences") or []
    for o in owners or [{"kind": "<none>", "name": "<none>", "controller": None}]:
        fam.add(
            "kube_pod_owner",
            {
                **pk,
                "owner_kind": o.get("kind", ""),
                "owner_name": o.get("name", ""),
                "owner_is_controller": str(bool(o.get("controller"))).lower()
                if o.get("controller") is not None
                else "<none>",
            },
            t,
            1,
        )
    for phase in PHASES:
        fam.add("kube_pod_status_phase", {**pk, "phase": phase}, t, 1 if status.get("phase") == phase else 0)
    for reason in REASONS:
        fam.add("kube_pod_status_reason", {**pk, "reason": reason}, t, 1 if status.get("reason") == reason else 0)
    for kind, key in (("", "containers"), ("init_", "initContainers")):
        for c in spec.get(key) or []:
            info = {**pk, "container": c["name"]}
            if kind:
                info["restart_policy"] = c.get("restartPolicy", "")
            fam.add(f"kube_pod_{kind}container_info", info, t, 1)
            for what in ("requests", "limits"):
                for res, qty in ((c.get("resources") or {}).get(what) or {}).items():
                    unit = "core" if res == "cpu" else "byte"
                    fam.add(
                        f"kube_pod_{kind}container_resource_{what}",
                        {**pk, "node": node, "container": c["name"], "resource": res.replace("-", "_"), "unit": unit},
                        t,
                        _qty_bytes(str(qty)),
                    )


def _node(fam: _Families, obj: dict[str, Any], node: str, t: float) -> None:
    status = obj.get("status", {})
    info = status.get("nodeInfo", {})
    fam.add("kube_node_info", {"node": node, "kubelet_version": info.get("kubeletVersion", "")}, t, 1)
    for what in ("capacity", "allocatable"):
        for res, qty in (status.get(what) or {}).items():
            unit = {"cpu": "core", "pods": "integer"}.get(res, "byte")
            fam.add(
                f"kube_node_status_{what}",
                {"node": node, "resource": res.replace("-", "_"), "unit": unit},
                t,
                _qty_bytes(str(qty)),
            )
    for c in status.get("conditions") or []:
        for st in ("true", "false", "unknown"):
            fam.add(
                "kube_node_status_condition",
                {"node": node, "condition": c["type"], "status": st},
                t,
                1 if c.get("status", "").lower() == st else 0,
            )


def backfill(openmetrics: Path, data: Path) -> None:
    """promtool tsdb create-blocks-from openmetrics FILE DIR."""
    assert PROMTOOL is not None
    data.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def prometheus(
    data: Path, *, deadline: float = 90.0, web_config: Path | None = None, ca_file: Path | None = None
) -> Iterator[Server]:
    """Run prometheus on ``data`` (no scraping, retention long enough for old timestamps) until ready;
    ``web_config``: its --web.config.file (TLS), checked for readiness with ``ca_file``."""
    assert PROMETHEUS is not None
    config = data.parent / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = free_port()
    log = (data.parent / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=100y",
            "--query.lookback-delta=5m",
            *([f"--web.config.file={web_config}"] if web_config else []),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"{'https' if web_config else 'http'}://127.0.0.1:{port}"
    verify: Any = True
    if web_config:
        import ssl

        verify = ssl.create_default_context(cafile=str(ca_file)) if ca_file else False
        if ca_file:
            verify.check_hostname = False  # the certificate names the Service, not 127.0.0.1
    try:
        end = time.monotonic() + deadline
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited: {(data.parent / 'prometheus.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/-/ready", timeout=2, verify=verify).status_code == 200:
                    break
            if time.monotonic() > end:
                raise AssertionError("prometheus not ready within the deadline")
            time.sleep(0.1)  # polling a condition under a deadline, not waiting on the clock
        yield Server(url, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def write_side_files(side: dict[str, Any], directory: Path) -> list[str]:
    """The side files as an SRE would pass them: ``--configz NODE=FILE``, ``--events``, ``--priority-classes``."""
    args = []
    for node, body in side["configz"].items():
        path = directory / f"configz-{node}.json"
        path.write_bytes(orjson.dumps(body))
        args += ["--configz", f"{node}={path}"]
    events = directory / "events.json"
    events.write_bytes(orjson.dumps(side["events"]))
    classes = directory / "priorityclasses.json"
    classes.write_bytes(orjson.dumps(side["priority_classes"]))
    return [*args, "--events", str(events), "--priority-classes", str(classes)]


def run_evictlens_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``evictlens ARGS`` in this process, through the same CLI edge (its exit status, one-line errors, stdout and
    stderr captured): no interpreter start-up and imports per command. ``replay`` runs with ``--jobs 1`` unless
    told otherwise (no process pool per call; its results equal any ``--jobs``, pinned by tests/replay)."""
    from cli_here import evictlens_here  # here: by-hand scripts put only this folder on sys.path

    argv = list(args)
    if argv[:1] == ["replay"] and "--jobs" not in argv:
        argv += ["--jobs", "1"]
    return evictlens_here(*argv)


@dataclass
class Loaded:
    """A real Prometheus serving a scenario's history: its URL, the scenario's own recording, the range, side files."""

    url: str
    rec: Path
    start: float
    end: float
    side: list[str]
    work: Path


def load_scenario(name: str, work: Path, *, chart_drops: bool = False, every: int = 1) -> Iterator[Loaded]:
    """A bundled scenario run, written as OpenMetrics, backfilled with promtool and served by a real Prometheus."""
    rec = work / "rec"
    run_scenario(load_bundled(name), rec)
    side = openmetrics_from_recording(rec, work / "om.txt", chart_drops=chart_drops, every=every)
    backfill(work / "om.txt", work / "data")
    ticks = open_recording(rec).ticks()
    args = write_side_files(side, work)
    with prometheus(work / "data") as srv:
        yield Loaded(srv.url, rec, ticks[0].time.timestamp(), ticks[-1].time.timestamp(), args, work)
