"""Benchmark (run by hand, not collected by pytest): eviction-manager passes on a busy node.

    .venv/bin/python tests/kubelet/bench_manager.py [PODS ...]

Builds a node with N pods shaped like the real captures (3 containers each, mixed QoS and
priorities), then times synchronize passes with no threshold met (observations only: the common
case of a replay) and with a hard memory threshold met (ranking with Go's sort + message).
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from replay.kubelet.api import parse_pods, parse_summary
from replay.kubelet.config import config_from_flags
from replay.kubelet.manager import EvictionManager
from replay.kubelet.versions import profile


def build(n: int, available: int, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(seed)
    pods, stats = [], []
    for i in range(n):
        uid = f"uid-{i}"
        req = rng.choice([None, "64Mi", "128Mi", "1Gi"])
        containers = [
            {"name": f"c{j}", **({"resources": {"requests": {"memory": req}}} if req else {})} for j in range(3)
        ]
        pods.append(
            {
                "metadata": {"name": f"pod-{i}", "namespace": "ns", "uid": uid},
                "spec": {"containers": containers, "priority": rng.choice([0, 0, 100, 1000])},
                "status": {"phase": "Running"},
            }
        )
        ws = [rng.randrange(1 << 20, 1 << 30) for _ in range(3)]
        stats.append(
            {
                "podRef": {"name": f"pod-{i}", "namespace": "ns", "uid": uid},
                "memory": {"workingSetBytes": sum(ws)},
                "containers": [
                    {
                        "name": f"c{j}",
                        "memory": {"workingSetBytes": w},
                        "rootfs": {"usedBytes": 4096, "inodesUsed": 3},
                        "logs": {"usedBytes": 8192, "inodesUsed": 1},
                    }
                    for j, w in enumerate(ws)
                ],
                "ephemeral-storage": {"usedBytes": 65536},
            }
        )
    summary = {
        "node": {
            "nodeName": "bench",
            "memory": {"availableBytes": available, "workingSetBytes": 30 << 30},
            "fs": {
                "availableBytes": 50 << 30,
                "capacityBytes": 100 << 30,
                "inodesFree": 5_000_000,
                "inodes": 6_000_000,
            },
            "rlimit": {"maxpid": 4_194_304, "curproc": 2000},
        },
        "pods": stats,
    }
    return {"kind": "PodList", "items": pods}, summary


def bench(n: int, available: int, label: str, passes: int = 50) -> None:
    raw_pods, raw_summary = build(n, available)
    pods = list(parse_pods(raw_pods, source="bench"))
    summary = parse_summary(raw_summary, source="bench")
    prof = profile("1.32")
    manager = EvictionManager(config_from_flags(prof, eviction_hard=["memory.available<1Gi"]), prof)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    t0 = time.perf_counter()
    evicted = 0
    for k in range(passes):
        result = manager.synchronize(summary, list(pods), start + timedelta(seconds=10 * k))
        evicted += len(result.evictions)
    elapsed = time.perf_counter() - t0
    print(f"{n:5d} pods, {label:22s}: {elapsed / passes * 1e3:8.2f} ms/pass ({passes} passes, {evicted} evictions)")


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [30, 110, 250]
    for n in sizes:
        bench(n, 8 << 30, "no threshold met")
        bench(n, 512 << 20, "memory threshold met")


if __name__ == "__main__":
    main(sys.argv[1:])
