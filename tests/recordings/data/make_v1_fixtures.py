"""How the schema-v1 fixtures next to this file were made — kept as a record, NOT to be re-run.

They were written by the schema-v1 writer and importer of evictlens at commit df10662 (before
part checksums existed), so that every later evictlens is tested against bytes an old
evictlens really wrote.  Re-running this with a newer writer would produce a newer schema and
defeat the purpose; make a new ``vN-*`` fixture instead.

* ``v1-import.evictlens.tar`` — ``evictlens import`` of the kind-sidecars sample: node
  ``kind-worker`` at three times, ``kind-worker2`` at two, pods, the node object, a /configz
  for ``kind-worker`` and an ``Evicted`` event; finalized, one part.
* ``v1-crashed.evictlens.tar`` — the writer killed mid-recording: ticks 0-2 folded into a
  part, ticks 3-4 only in the journal (tick 4 a gap on ``node-b``), then half a frame of
  tick 5 (a torn tail); never finalized.

Run from the repository root: ``python tests/recordings/data/make_v1_fixtures.py OUTDIR``.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

SAMPLE = Path("recordings/samples/kind-sidecars")
TIMES = ["2024-05-20T10:15:22Z", "2024-05-20T10:15:32Z", "2024-05-20T10:15:42Z"]


def _cli(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "recordings.cli", *args], check=True, cwd=cwd, env=env)


def make_import(out: Path, work: Path) -> None:
    summary = orjson.loads((SAMPLE_ABS / "summary.json").read_bytes())
    other = copy.deepcopy(summary)
    other["node"]["nodeName"] = "kind-worker2"
    (work / "summary2.json").write_bytes(orjson.dumps(other))
    (work / "configz.json").write_bytes(
        orjson.dumps(
            {
                "kubeletconfig": {
                    "kind": "KubeletConfiguration",
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "evictionHard": {"memory.available": "1.5Gi"},
                }
            }
        )
    )
    event = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "alloc-sidecars.17d1", "namespace": "default", "uid": "ev-1"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "alloc-sidecars",
            "uid": "0d4e3c1a-6c1f-4a53-9a55-3d2f8f1b7e01",
        },
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "kind-worker"},
        "lastTimestamp": "2024-05-20T10:15:45Z",
    }
    (work / "events.json").write_bytes(orjson.dumps({"kind": "EventList", "apiVersion": "v1", "items": [event]}))
    files = [f"summary.json@{t}" for t in TIMES] + [f"summary2.json@{t}" for t in TIMES[:2]]
    for name in ("summary.json", "pods.json", "node.json"):
        (work / name).write_bytes((SAMPLE_ABS / name).read_bytes())
    rec = work / "rec"
    extra = ["pods.json", "node.json", "configz.json", "events.json", "--node", "kind-worker"]
    _cli("import", *files, *extra, "-o", "rec", cwd=work)
    _cli("pack", str(rec), "-o", str(out / "v1-import.evictlens.tar"), cwd=work)


def make_crashed(out: Path, work: Path) -> None:
    from recordings import format as fmt
    from recordings.journal import encode_frame
    from recordings.writer import RecordingWriter

    summary = orjson.loads((SAMPLE_ABS / "summary.json").read_bytes())
    pods = orjson.loads((SAMPLE_ABS / "pods.json").read_bytes())
    root = work / "crashed"
    w = RecordingWriter(root, fmt.Manifest(source="recorder", options={"interval": "10s"}))
    base = 1_716_200_122_000_000  # 2024-05-20T10:15:22Z
    for pod in pods["items"]:
        w.observe("pod", pod, observed=base)
    for i in range(5):
        tick = w.begin_tick(base + i * 10_000_000)
        tick.add_summary("node-a", summary, scraped=tick.time)
        if i == 4:
            tick.add_gap("node-b", "timeout for GET /api/v1/nodes/node-b/proxy/stats/summary")
        else:
            tick.add_summary("node-b", summary, scraped=tick.time)
        w.commit(tick)
        if i == 2:
            w.fold()
    frame = encode_frame({"tick": 5, "time": base + 50_000_000, "tables": {}})
    ((_seq, seg),) = fmt.list_segments(root)
    with seg.open("ab") as fh:
        fh.write(frame[: len(frame) // 2])
    _cli("pack", str(root), "-o", str(out / "v1-crashed.evictlens.tar"), cwd=work)


REPO = Path(__file__).resolve().parents[3]
SAMPLE_ABS = REPO / SAMPLE

if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        make_crashed(target, Path(tmp))
        make_import(target, Path(tmp))
