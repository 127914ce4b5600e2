"""A synthetic cluster shaped like ../shared/realdata (nri-kubernetes 1.28 capture).

Every node serves a Summary built from the real one: the real pod entries (with cpu, network,
swap and all the fields the recorder must drop), cycled to the wanted pod count, with
time-varying memory, filesystem, inode and process figures.  Pods come from the real
kubelet /pods list, with secrets planted (env values, args, last-applied annotation) so the
privacy test can assert none reaches a recording.
"""

from __future__ import annotations

import copy
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[3]
REALDATA = Path(os.environ.get("EVICTLENS_REALDATA", ROOT.parent / "shared" / "realdata"))
SECRET = "SECRET-7f3a"  # every planted secret contains this marker
_NS = uuid.UUID("6f1c9f7e-4d3c-4e39-9d52-2b7c0c2f0a11")
PAGE = 4096


def _load(rel: str) -> Any:
    return orjson.loads((REALDATA / rel).read_bytes())


def _stamp(now: float) -> str:
    return datetime.fromtimestamp(int(now), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _noise(*parts: int) -> int:
    """Cheap deterministic pseudo-random 0..255 (splitmix-like)."""
    x = 0x9E3779B97F4A7C15
    for p in parts:
        x = ((x ^ p) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 31
    return x & 0xFF


PRESSURE_KUBELET_VERSION = "v1.30.4"
PRESSURE_THRESHOLD = "1Gi"  # the pressure configz's evictionHard memory.available
SIDECARS = Path(__file__).resolve().parents[3] / "recordings" / "samples" / "kind-sidecars"


class SyntheticCluster:
    def __init__(
        self, nodes: int, pods: int, *, kubelet_ports: dict[str, int] | None = None, pressure: bool = False
    ) -> None:
        summary = _load("nri-kubernetes-1_28/summary")
        podlist = _load("nri-kubernetes-1_28/pods")
        self.configz_body = _load("datadog-agent/kubelet_config.json")
        # Pressure mode (off by default): kubelets at 1.30 with evictionHard memory.available<1Gi,
        # and on every node a pod shaped like kind-sidecars' alloc-sidecars (see pressure.py).
        self.pressure = pressure
        if pressure:
            self.configz_body = copy.deepcopy(self.configz_body)
            self.configz_body["kubeletconfig"]["evictionHard"] = {"memory.available": PRESSURE_THRESHOLD}
        self.sidecar_uids: dict[str, str] = {}
        self.names = [f"node-{i:03d}" for i in range(nodes)]
        self.kubelet_ports = kubelet_ports or {}
        self.boot = 1_700_000_000
        self.kubelet_restarts: dict[str, int] = {}
        self.ready: dict[str, tuple[str, str, float]] = {}  # node -> Ready (status, reason, since) set by a test
        tpl_pods = [p for p in summary["pods"]]
        tpl_specs = {p["metadata"]["uid"]: p for p in podlist["items"]}
        fallback = podlist["items"][1]
        self.summaries: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, list[dict[str, Any]]] = {}
        for n, name in enumerate(self.names):
            node_part = copy.deepcopy(summary["node"])
            node_part["nodeName"] = name
            spods, opods = [], []
            for j in range(pods):
                tpl = tpl_pods[j % len(tpl_pods)]
                uid = str(uuid.uuid5(_NS, f"{name}/{j}"))
                pname = f"{tpl['podRef']['name']}-{n}-{j}"
                sp = copy.deepcopy(tpl)
                sp["podRef"] = {"name": pname, "namespace": tpl["podRef"]["namespace"], "uid": uid}
                spods.append(sp)
                spec_tpl = tpl_specs.get(tpl["podRef"]["uid"], fallback)
                opods.append(self._pod(spec_tpl, name, pname, uid, j))
            if pressure:
                sp, op = self._sidecar_pod(name, n)
                spods.append(sp)
                opods.append(op)
                self.sidecar_uids[name] = op["metadata"]["uid"]
            self.summaries[name] = {"node": node_part, "pods": spods}
            self.pods[name] = opods

    @staticmethod
    def _sidecar_pod(node: str, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """alloc-sidecars of recordings/samples/kind-sidecars: restartable init containers
        el-sidecar1..3 and containers el1..el3, no requests (its summary entry and its Pod)."""
        tpl = next(
            p
            for p in orjson.loads((SIDECARS / "pods.json").read_bytes())["items"]
            if p["metadata"]["name"] == "alloc-sidecars"
        )
        stats = next(
            p
            for p in orjson.loads((SIDECARS / "summary.json").read_bytes())["pods"]
            if p["podRef"]["name"] == "alloc-sidecars"
        )
        name, uid = f"alloc-sidecars-{n}", str(uuid.uuid5(_NS, f"{node}/alloc-sidecars"))
        pod = copy.deepcopy(tpl)
        pod["metadata"].update(name=name, uid=uid, resourceVersion="1")
        pod["spec"]["nodeName"] = node
        sp = copy.deepcopy(stats)
        sp["podRef"] = {"name": name, "namespace": pod["metadata"]["namespace"], "uid": uid}
        return sp, pod

    @staticmethod
    def _pod(tpl: dict[str, Any], node: str, name: str, uid: str, j: int) -> dict[str, Any]:
        pod = copy.deepcopy(tpl)
        meta = pod["metadata"]
        meta.update(name=name, uid=uid, resourceVersion="1")
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = (
            f'{{"password":"{SECRET}-laa-{j}"}}'
        )
        pod["spec"]["nodeName"] = node
        for c in pod["spec"].get("containers", []):
            c["env"] = [{"name": "DB_PASSWORD", "value": f"{SECRET}-env-{j}"}]
            c["args"] = [f"--token={SECRET}-arg-{j}"]
            c["command"] = ["/bin/sh", "-c", f"echo {SECRET}-cmd"]
        pod["spec"].setdefault("volumes", []).append(
            {"name": "creds", "secret": {"secretName": f"{SECRET}-vol", "items": [{"key": f"{SECRET}-k", "path": "p"}]}}
        )
        pod["status"]["phase"] = "Running"
        pod["status"].pop("reason", None)
        return pod

    # -- endpoints ------------------------------------------------------------------------
    def summary(
        self, node: str, now: float, *, skip: frozenset[str] = frozenset(), fill: tuple[str, str, int] | None = None
    ) -> bytes:
        """The node's summary at ``now``: memory moves by pages, disks fill slowly.

        ``skip``: pod UIDs left out (an evicted pod's containers are gone).  ``fill`` = (pod UID,
        container, bytes): that container's working set is whatever brings the node's
        ``memory.availableBytes`` to exactly those bytes (pressure mode).
        """
        doc = self.summaries[node]
        t = _stamp(now)
        bucket = int(now) // 10
        n = self.names.index(node)
        nd = doc["node"]
        total_ws = 0
        served = []
        for j, pod in enumerate(doc["pods"]):
            if pod["podRef"]["uid"] in skip:
                continue
            served.append(pod)
            pod_ws = 0
            for k, c in enumerate(pod["containers"]):
                mem = c.setdefault("memory", {})
                base = 8_000_000 + (j * 7919 + k * 104729) % 200 * PAGE * 16
                ws = base + PAGE * _noise(n, j, k, bucket)
                mem.update(time=t, workingSetBytes=ws, usageBytes=ws + PAGE * 32, rssBytes=ws - PAGE * 8)
                for key in ("rootfs", "logs"):
                    fs = c.setdefault(key, {})
                    fs.update(time=t, usedBytes=32768 + PAGE * (bucket % 97), inodesUsed=9 + bucket % 5)
                pod_ws += ws
            pod.setdefault("memory", {}).update(time=t, workingSetBytes=pod_ws, usageBytes=pod_ws + PAGE * 64)
            eph = pod.setdefault("ephemeral-storage", {})
            eph.update(time=t, usedBytes=69632 + PAGE * (bucket % 97) * len(pod["containers"]))
            pod["process_stats"] = {"process_count": 1 + _noise(n, j, bucket) % 4}
            total_ws += pod_ws
        cap = 8_232_615_936
        if fill is not None:
            fill_uid, fill_name, available = fill
            for pod in served:
                if pod["podRef"]["uid"] == fill_uid:
                    grow = cap - total_ws - 900_000_000 - available
                    c = next(c for c in pod["containers"] if c["name"] == fill_name)
                    ws = c["memory"]["workingSetBytes"] + grow
                    c["memory"].update(workingSetBytes=ws, usageBytes=ws + PAGE * 32, rssBytes=ws - PAGE * 8)
                    pws = pod["memory"]["workingSetBytes"] + grow
                    pod["memory"].update(workingSetBytes=pws, usageBytes=pws + PAGE * 64)
                    total_ws += grow
        nd["memory"].update(time=t, workingSetBytes=total_ws + 900_000_000, availableBytes=cap - total_ws - 900_000_000)
        for sc in nd["systemContainers"]:
            if sc["name"] == "pods":
                sc["memory"].update(time=t, workingSetBytes=total_ws, availableBytes=cap - total_ws)
            if sc["name"] == "kubelet":
                sc["startTime"] = _stamp(self.boot + self.kubelet_restarts.get(node, 0))
        used = 16_047_185_920 + PAGE * 64 * (bucket % 1000)
        nd["fs"].update(
            time=t, usedBytes=used, availableBytes=62_725_623_808 - used, inodesFree=3_743_185 - bucket % 1000
        )
        nd["runtime"]["imageFs"].update(time=t)
        nd["rlimit"].update(time=t, curproc=400 + _noise(n, bucket) % 64)
        if skip:
            return orjson.dumps({**doc, "pods": served})
        return orjson.dumps(doc)

    def pod_list(self, node: str | None = None) -> list[dict[str, Any]]:
        names = [node] if node else self.names
        return [p for n in names for p in self.pods[n]]

    def node_object(self, node: str, rv: int) -> dict[str, Any]:
        port = self.kubelet_ports.get(node, 10250)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node,
                "uid": str(uuid.uuid5(_NS, node)),
                "resourceVersion": str(rv),
                "labels": {"kubernetes.io/hostname": node, "pool": "a" if node.endswith(("0", "2", "4")) else "b"},
                "annotations": {"secret-ish": f"{SECRET}-node-annotation"},
            },
            "spec": {},
            "status": {
                "capacity": {"cpu": "4", "memory": "8039664Ki", "ephemeral-storage": "61255492Ki", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "8039664Ki", "ephemeral-storage": "61255492Ki", "pods": "110"},
                "conditions": [
                    {
                        "type": "MemoryPressure",
                        "status": "False",
                        "reason": "KubeletHasSufficientMemory",
                        "lastHeartbeatTime": _stamp(self.boot),
                        "lastTransitionTime": _stamp(self.boot),
                    },
                    {
                        "type": "Ready",
                        "status": self.ready.get(node, ("True",))[0],
                        "reason": self.ready.get(node, ("", "KubeletReady"))[1] or "KubeletReady",
                        "lastHeartbeatTime": _stamp(self.boot),
                        "lastTransitionTime": _stamp(self.ready[node][2] if node in self.ready else self.boot),
                    },
                ],
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                "nodeInfo": {
                    "kubeletVersion": PRESSURE_KUBELET_VERSION if self.pressure else "v1.28.3",
                    "containerRuntimeVersion": "containerd://1.6.24",
                    "osImage": "Ubuntu 22.04.3 LTS",
                    "kernelVersion": "5.10.104-linuxkit",
                    "operatingSystem": "linux",
                    "architecture": "arm64",
                    "bootID": "b-" + node,
                },
            },
        }
