"""A real full disk: ``record --retain`` on a 6 MiB tmpfs (mounted in a private user and mount namespace with
``unshare -r -m``; skipped where unprivileged namespaces are not allowed). The kernel's ENOSPC — on journal frames,
Parquet parts and the manifest — shrinks the window instead of stopping the recorder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from rec_support import REPO, FakeServer, child_env

from recordings.reader import open_recording

INSIDE = textwrap.dedent(
    """
    import shutil, signal, subprocess, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from rec_support import StderrLines, start_record, wait_for
    mount, keep, kubeconfig = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m,mode=0700", "tmpfs", str(mount)], check=True)
    out = mount / "rec"
    proc = start_record(["--kubeconfig", kubeconfig, "--context", "static", "-o", str(out), "--interval", "0.5s",
                         "--timeout", "1s", "--retain", "1h", "--keep-raw"], env={"EVICTLENS_FOLD_EVERY_TICKS": "2"})
    status = StderrLines(proc)
    try:
        wait_for(lambda: status.has("disk full: dropped") or proc.poll() is not None, timeout=240, what="a shrink")
        shrinks = sum("disk full: dropped" in x for x in status.lines)
        wait_for(lambda: sum("disk full: dropped" in x for x in status.lines) >= shrinks + 2 or proc.poll() is not None,
                 timeout=240, what="two more shrinks")
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = status.text()
    shutil.copytree(out, keep / "rec")
    (keep / "stderr.txt").write_text(err)
    (keep / "code.txt").write_text(str(proc.returncode))
    """
)


@pytest.fixture(scope="module")
def busy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """Bigger ticks than the module-wide 3 × 4 cluster, so 6 MiB fill in seconds."""
    server = FakeServer(tmp_path_factory.mktemp("apiserver"), nodes=12, pods=20, kubelet_ports=False)
    server.start()
    yield server
    server.stop()


def _namespaces() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = subprocess.run([unshare, "-r", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _namespaces(), reason="unshare -r -m (unprivileged user and mount namespaces) not available")
def test_a_real_full_tmpfs_shrinks_the_window_and_the_recorder_finishes(
    busy_cluster: FakeServer, tmp_path: Path
) -> None:
    mount, keep = tmp_path / "mnt", tmp_path / "keep"
    mount.mkdir()
    keep.mkdir()
    cmd = ["unshare", "-r", "-m", sys.executable, "-c", INSIDE, str(Path(__file__).parent), str(mount), str(keep)]
    res = subprocess.run(
        [*cmd, busy_cluster.kubeconfig], env=child_env(), cwd=REPO, capture_output=True, text=True, check=False
    )
    if res.returncode != 0 and "mount" in res.stderr and "permission denied" in res.stderr.lower():
        pytest.skip("tmpfs cannot be mounted in a user namespace here")
    assert res.returncode == 0, res.stderr
    err = (keep / "stderr.txt").read_text()
    assert (keep / "code.txt").read_text() == "0", err
    lines = [x for x in err.splitlines() if "disk full: dropped the oldest part" in x]
    assert len(lines) >= 3 and "the window now starts at" in lines[-1]
    assert "Traceback" not in err and "could not finalize" not in err
    rec = open_recording(keep / "rec")
    marks = rec.scan_ticks().collect()
    ticks = sorted(set(marks["tick"].to_list()))
    assert ticks[0] > 0 and ticks == list(range(ticks[0], ticks[0] + len(ticks)))
    first = rec.ticks("node-000")[0].time
    assert len(rec.pods_at("node-000", first)) == 20  # the objects in force survived every shrink
    assert rec.manifest.finalized
