"""``record --kubelet-direct`` against slow kubelets: every pod list is recorded or the tick says it is stale.

The pods come from each kubelet's ``/pods``.  They used to be fetched after the summaries under
the same per-tick deadline, and a fetch that missed it was dropped without a trace: with slow
kubelets a whole recording held no pod and ``replay`` said nothing.  Now the fetch runs beside
the summaries and may outlive its tick; a node tick without a fresh list carries a note in its
``ticks`` row, and the misses are counted in the status line, the manifest and ``info``.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import polars as pl
from rec_support import FakeServer, journal_frames, kill_quietly, run_cli, start_record, tick_rows, wait_for

from recordings.reader import open_recording

INTERVAL = 2.0  # a tick's polls may take 1.8 s


def _record(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return [
        "--kubeconfig",
        server.kubeconfig,
        "--context",
        "static",
        "-o",
        str(out),
        "--kubelet-direct",
        "--interval",
        f"{INTERVAL:g}s",
        *extra,
    ]


def _pod_nodes(out: Path) -> set[str]:
    """The nodes whose pods the live recording holds so far."""
    nodes: set[str] = set()
    for frame in journal_frames(out):
        cols = frame.get("tables", {}).get("objects")
        if cols:
            nodes |= {n for k, n in zip(cols["kind"], cols["node"], strict=True) if k == "pod"}
    return nodes


def _run_until(server: FakeServer, out: Path, ticks: int, *extra: str) -> str:
    """Record until ``ticks`` ticks are committed and every node's pods are in, then SIGTERM."""
    proc = start_record(_record(server, out, *extra))
    try:
        wait_for(
            lambda: len({t for t, _n, _ok in tick_rows(out)}) >= ticks and len(_pod_nodes(out)) == 3,
            timeout=120,
            what=f"{ticks} ticks and the pods of every node",
        )
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    return err


def _notes(out: Path) -> pl.DataFrame:
    return (
        open_recording(out)
        .scan_ticks()
        .filter(pl.col("ok") & pl.col("error").is_not_null())
        .select("tick", "node", "error")
        .sort("tick", "node")
        .collect()
    )


def test_kubelets_slower_than_half_the_interval_still_give_every_pod_list(server: FakeServer, tmp_path: Path) -> None:
    """Summaries and /pods both take 0.6 of the interval: fetched side by side, both make the tick."""
    server.faults(latency=0.6 * INTERVAL, pods_latency=0.6 * INTERVAL)
    out = tmp_path / "rec"
    _run_until(server, out, 3, "--timeout", "5s")
    rec = open_recording(out)
    assert all(t.ok for t in rec.ticks())
    for node in ("node-000", "node-001", "node-002"):
        assert len(rec.pods_at(node)) == 4, node
    notes = _notes(out)
    assert all(e.startswith(("pods stale: ", "pods missing: ")) for e in notes["error"])
    assert rec.manifest.counts["pods_missed"] == notes.height  # every tick without a fresh list is marked
    ok_rows = rec.scan_ticks().filter(pl.col("ok")).collect().height
    assert notes.height < ok_rows  # and most had one (the old code: no pod at all, no note)


def test_a_kubelet_slower_than_the_interval_lands_its_list_later_and_marks_the_ticks_between(
    server: FakeServer, tmp_path: Path
) -> None:
    """/pods takes 1.5 intervals: tick 0 has no list yet, and each tick that starts a fetch keeps the last list."""
    server.faults(pods_latency=1.5 * INTERVAL)
    out = tmp_path / "rec"
    err = _run_until(server, out, 4, "--timeout", "5s")
    rec = open_recording(out)
    assert all(t.ok for t in rec.ticks())
    for node in ("node-000", "node-001", "node-002"):
        assert len(rec.pods_at(node)) == 4, node
    notes = _notes(out)
    first = notes.filter(pl.col("tick") == 0)
    assert first["node"].to_list() == ["node-000", "node-001", "node-002"]
    assert all(e.startswith("pods missing: no /pods list from the kubelet yet") for e in first["error"])
    stale = notes.filter(pl.col("error").str.starts_with("pods stale: "))
    assert stale.height >= 3 and all(re.search(r"as listed at tick \d+$", e) for e in stale["error"])
    missed = rec.manifest.counts["pods_missed"]
    assert missed == notes.height and rec.manifest.counts["pods_fetch_failed"] == 0
    assert f"pods missed {missed} (failed fetches 0)" in err.splitlines()[-1]  # the final status line
    info = run_cli("info", str(out))
    assert info.returncode == 0, info.stderr
    assert re.search(rf"^  pods_missed +{missed}$", info.stdout, re.MULTILINE), info.stdout


def test_a_kubelet_that_never_answers_in_time_is_counted_in_the_status_line(server: FakeServer, tmp_path: Path) -> None:
    """/pods slower than --timeout: every fetch fails, each is counted, each tick says the pods are missing."""
    server.faults(pods_latency=30)
    out = tmp_path / "rec"
    proc = start_record(_record(server, out, "--timeout", "1s"))
    try:
        wait_for(lambda: len({t for t, _n, _ok in tick_rows(out)}) >= 3, timeout=120, what="3 ticks")
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    rec = open_recording(out)
    notes = _notes(out)
    assert notes.height == rec.scan_ticks().filter(pl.col("ok")).collect().height  # no tick had pods
    assert all(e.startswith("pods missing: ") for e in notes["error"])
    assert "timeout for GET /pods" in " ".join(notes["error"])
    failed = rec.manifest.counts["pods_fetch_failed"]
    assert failed >= 3 and f"(failed fetches {failed})" in err.splitlines()[-1]
