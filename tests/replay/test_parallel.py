"""--jobs and --ray shard nodes and give the one-process result, eviction ids included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recordings.reader import open_recording
from replay import engine
from replay.kubelet.config import FlagOverrides
from replay.settings import SettingsRequest


def _equivalence() -> Any:
    """The equivalence test's recording writer and comparison (tests/replay is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_fast_equivalence", Path(__file__).with_name("test_fast_equivalence.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_eq = _equivalence()
GI, assert_same, reference, write = _eq.GI, _eq.assert_same, _eq.reference, _eq.write

REQUEST = SettingsRequest(
    kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=("memory.available<1Gi", "nodefs.available<10%"))
)


def _pod(node: str, i: int, n: int) -> dict[str, Any]:
    return {
        "obj": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{node}-p{i}", "namespace": "default", "uid": f"{node}-u{i}"},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        },
        "start": 0,
        "end": None,
        "usage": [GI * (i + 1)] * n,
        "disk": [GI] * n,
    }


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    n = 6
    nodes = {
        f"node-{k}": {
            "pods": [_pod(f"node-{k}", i, n) for i in range(3)],
            "mem": [4 * GI, GI - k, GI // 2, 2 * GI, GI // 2, GI // 2],
            "fs": [80, 80, 5, 80, 80, 9],
            "pids": [100] * n,
            "gap": [False] * n,
            "stale": [False] * n,
            "imagefs": k % 2 == 0,
        }
        for k in range(4)
    }
    path: Path = write(tmp_path_factory.mktemp("par") / "rec", {"ticks": n, "nodes": nodes})
    return path


def test_jobs_2_gives_the_one_process_result(recording: Path) -> None:
    (one,) = engine.replay(open_recording(recording), [REQUEST])
    (two,) = engine.replay(open_recording(recording), [REQUEST], jobs=2)
    assert len(one.evictions) > 4
    assert_same(one, two)
    assert_same(reference(recording, REQUEST), two)


def test_ray_gives_the_one_process_result(recording: Path) -> None:
    ray = pytest.importorskip("ray", reason="ray is not installed for this Python (pip install 'evictlens[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        (got,) = engine.replay(open_recording(recording), [REQUEST], ray="")
    finally:
        ray.shutdown()
    assert_same(engine.replay(open_recording(recording), [REQUEST])[0], got)
