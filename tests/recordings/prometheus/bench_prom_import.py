"""Benchmark (by hand, not collected by pytest): ``import --prometheus`` of N nodes × H hours from a local server.

    .venv/bin/python tests/recordings/prometheus/bench_prom_import.py --nodes 20 --hours 24 --pods 10 -d /tmp/pb

Generates synthetic exporter series (cAdvisor and kubelet every 10 s, node-exporter every 10 s,
kube-state-metrics every 30 s; ``--pods`` pods of two containers per node), backfills them with
``promtool tsdb create-blocks-from openmetrics`` one 2-hour file at a time (promtool reads its whole
input once per block otherwise), starts ``prometheus`` on the blocks and times the import (wall,
CPU, peak RSS of the import process). ``--keep`` reuses the blocks of an earlier run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

from prom_support import backfill, prometheus  # noqa: E402

MI, GI = 1 << 20, 1 << 30
T0 = 1_763_000_000  # seconds, on a 2 h boundary


def _lab(d: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(d.items())) + "}"


def write_chunk(path: Path, lo: int, hi: int, nodes: int, pods: int) -> int:
    """Ticks [lo, hi) (10 s) of every series, family by family; returns the number of samples."""
    fams: dict[str, list[tuple[str, int, int, int, int]]] = {}  # family → (labels, node, pod, ctr, kind)

    def add(fam: str, labels: dict[str, str], n: int, p: int = -1, c: int = -1, kind: int = 0) -> None:
        fams.setdefault(fam, []).append((_lab(labels), n, p, c, kind))

    for n in range(nodes):
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
            add(
                "kube_pod_owner",
                {
                    **pod,
                    "uid": uid,
                    "owner_kind": "ReplicaSet",
                    "owner_name": f"app-{n}",
                    "owner_is_controller": "true",
                },
                n,
                p,
                kind=30,
            )
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
                add(
                    "kube_pod_container_resource_requests",
                    {**ctr, "uid": uid, "node": node, "resource": "memory", "unit": "byte"},
                    n,
                    p,
                    c,
                    kind=34,
                )
    samples = 0
    with path.open("w", buffering=1 << 22) as fh:
        for fam, series in fams.items():
            fh.write(f"# TYPE {fam} gauge\n")
            for tick in range(lo, hi):
                ksm = fam.startswith("kube_")
                if ksm and tick % 3:
                    continue  # kube-state-metrics every 30 s
                ts = T0 + tick * 10
                wave = (tick * 7) % 360
                lines = []
                for labels, n, p, c, kind in series:
                    v = _value(kind, n, p, c, wave)
                    lines.append(f"{fam}{labels} {v} {ts}\n")
                fh.write("".join(lines))
                samples += len(lines)
        fh.write("# EOF\n")
    return samples


def _value(kind: int, n: int, p: int, c: int, wave: int) -> int:
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--pods", type=int, default=10)
    ap.add_argument("-d", "--dir", type=Path, default=Path("/tmp/prom-bench"))
    ap.add_argument("--keep", action="store_true", help="reuse the blocks already in DIR/data")
    ap.add_argument(
        "--chunk-minutes",
        type=int,
        default=120,
        help="backfill this much at a time (promtool holds a chunk in memory: 100 nodes × 1 h took > 8 GB)",
    )
    ap.add_argument("--minutes", type=int, help="import only the first MINUTES of the generated range")
    ap.add_argument("import_args", nargs="*", help="more import flags (after --), e.g. -- --window 30m")
    args = ap.parse_args()
    data = args.dir / "data"
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)
        args.dir.mkdir(parents=True)
        started, total = time.monotonic(), 0
        per = args.chunk_minutes * 6  # ticks of 10 s
        for lo in range(0, args.hours * 360, per):
            path = args.dir / "chunk.om"
            total += write_chunk(path, lo, min(args.hours * 360, lo + per), args.nodes, args.pods)
            backfill(path, data)
            path.unlink()
        print(f"generated and backfilled {total:,} samples in {time.monotonic() - started:.0f}s")
    out = args.dir / "rec"
    shutil.rmtree(out, ignore_errors=True)
    log_out, log_err = args.dir / "import.out", args.dir / "import.err"
    with prometheus(data, deadline=600) as srv, log_out.open("w") as fo, log_err.open("w") as fe:
        started = time.monotonic()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "replay.cli",
                "import",
                "--prometheus",
                srv.url,
                "--from",
                str(T0),
                "--to",
                str(T0 + (args.minutes * 60 if args.minutes else args.hours * 3600) - 10),
                "-o",
                str(out),
                *args.import_args,
            ],
            cwd=ROOT,
            stdout=fo,
            stderr=fe,
        )
        # wait4 on the import alone: RUSAGE_CHILDREN's peak would be promtool's or prometheus'
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
    print(log_out.read_text().strip(), log_err.read_text().strip()[-2000:], sep="\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6 if out.exists() else 0.0
    print(
        f"import: {wall:.0f}s wall, {usage.ru_utime + usage.ru_stime:.0f}s CPU (import process), "
        f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB; recording {size:.1f} MB"
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
