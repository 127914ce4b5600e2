"""How the schema-v2 fixture next to this file was made — kept as a record, NOT to be re-run.

Written by the schema-v2 importer of evictlens at commit fb1e541 (before the ``kernel_events``
table of schema v3), so that every later evictlens is tested against bytes a v2 evictlens really
wrote.  Re-running this with a newer writer would produce a newer schema; make a new ``vN-*``
fixture instead.

* ``v2-import.evictlens.tar`` — ``evictlens import`` of the kind-sidecars sample (node
  ``kind-worker`` at three times), its pods with one container whose ``lastState`` says
  ``OOMKilled`` (exit code 137), the node object, and an events list with an ``Evicted`` and a
  ``SystemOOM`` event (v2 drops the latter). A v2 recording has no kernel kills: v3 readers
  find none in it.

Run from the repository root: ``python tests/recordings/data/make_v2_fixtures.py OUTDIR``.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"
TIMES = ["2024-05-20T10:15:22Z", "2024-05-20T10:15:32Z", "2024-05-20T10:15:42Z"]


def _cli(*args: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "recordings.cli", *args], check=True, cwd=cwd, env=env)


def oom_killed_pods() -> dict[str, object]:
    pods = copy.deepcopy(orjson.loads((SAMPLE / "pods.json").read_bytes()))
    pod = next(p for p in pods["items"] if p["metadata"]["name"] == "alloc-sidecars")
    pod["status"]["containerStatuses"] = [
        {
            "name": "el1",
            "ready": True,
            "restartCount": 1,
            "state": {"running": {"startedAt": "2024-05-20T10:15:31Z"}},
            "lastState": {
                "terminated": {
                    "exitCode": 137,
                    "reason": "OOMKilled",
                    "startedAt": "2024-05-20T10:14:00Z",
                    "finishedAt": "2024-05-20T10:15:30Z",
                }
            },
        }
    ]
    return pods


def events() -> dict[str, object]:
    evicted = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "alloc-sidecars.17d1", "namespace": "default", "uid": "ev-1"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "alloc-sidecars"},
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "kind-worker"},
        "lastTimestamp": "2024-05-20T10:15:45Z",
    }
    system_oom = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "kind-worker.17d2", "namespace": "default", "uid": "ev-2"},
        "involvedObject": {"kind": "Node", "name": "kind-worker", "uid": "kind-worker"},
        "reason": "SystemOOM",
        "message": "System OOM encountered, victim process: stress, pid: 4242",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "kind-worker"},
        "lastTimestamp": "2024-05-20T10:15:35Z",
    }
    return {"kind": "EventList", "apiVersion": "v1", "items": [evicted, system_oom]}


def make_import(out: Path, work: Path) -> None:
    (work / "summary.json").write_bytes((SAMPLE / "summary.json").read_bytes())
    (work / "node.json").write_bytes((SAMPLE / "node.json").read_bytes())
    (work / "pods.json").write_bytes(orjson.dumps(oom_killed_pods()))
    (work / "events.json").write_bytes(orjson.dumps(events()))
    files = [f"summary.json@{t}" for t in TIMES]
    _cli("import", *files, "pods.json", "node.json", "events.json", "-o", "rec", cwd=work)
    _cli("pack", str(work / "rec"), "-o", str(out / "v2-import.evictlens.tar"), cwd=work)


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        make_import(target, Path(tmp))
