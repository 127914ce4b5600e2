"""``evictlens record --retain`` against the test API server (issue 24 items 1 and 5): the rolling window, readers
on the live directory, SIGKILL restarts with the same arguments, two recorders on one volume, a full disk, and bad
input. Every wait is on a condition (the recorder's stderr, what a reader sees), never on the clock."""

from __future__ import annotations

import json
import random
import signal
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
from rec_support import (
    FakeServer,
    StderrLines,
    kill_quietly,
    run_evictlens,
    run_record,
    start_record,
    wait_for,
)

from recordings import format as fmt
from recordings import retention as ret
from recordings.format import Manifest
from recordings.reader import Recording, open_recording
from recordings.schema import ALL_SCHEMAS
from recordings.writer import RESTARTED, RecordingWriter

FAST = ["--interval", "0.5s", "--timeout", "1s"]


def _args(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return ["--kubeconfig", server.kubeconfig, "--context", "static", "-o", str(out), *FAST, *extra]


def _live_ticks(out: Path) -> list[int]:
    if not (out / fmt.MANIFEST).exists():
        return []
    return sorted(open_recording(out).scan_ticks().collect()["tick"].unique().to_list())


def _check_whole(rec: Recording, nodes: int = 3) -> list[int]:
    """Every tick once, contiguous, each node marked once, a summary for each node that answered."""
    marks = rec.scan_ticks().collect()
    ticks = sorted(set(marks["tick"].to_list()))
    assert ticks == list(range(ticks[0], ticks[0] + len(ticks))), ticks
    assert set(marks.group_by("tick").len()["len"]) == {nodes}
    answered = marks.filter(pl.col("ok")).group_by("tick").len().sort("tick")
    stored = rec.scan_node_stats().collect().group_by("tick").len().sort("tick")
    assert stored.rows() == answered.rows()
    return ticks


def test_retain_drops_old_parts_keeps_the_objects_in_force_and_records_the_retention(
    server: FakeServer, tmp_path: Path
) -> None:
    out = tmp_path / "rec"
    proc = start_record(_args(server, out, "--retain", "3s"))
    try:
        status = StderrLines(proc)
        wait_for(
            lambda: (
                (any(p.name.startswith("p000000-") for p in (out / "parts").glob("p*")) and len(_live_ticks(out)) >= 6)
                or proc.poll() is not None
            ),
            what="a base part and six ticks",
        )
        assert proc.poll() is None, status.text()
        live = open_recording(out)
        ticks = _check_whole(live)
        assert ticks[0] > 0
        first = live.ticks("node-000")[0].time
        for node in ("node-000", "node-001", "node-002"):
            assert len(live.pods_at(node, first)) == 4  # listed at tick 0, carried forward
            assert live.node_object_at(node, first) is not None
            assert live.configz(node, first) is not None  # read once, at the first tick
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, status.text()
    rec = open_recording(out)
    assert rec.manifest.finalized and rec.manifest.options["retain"] == 3.0
    first_t, last_t = rec.time_range()
    assert first_t is not None and last_t is not None
    assert (last_t - first_t) / 1e6 <= 3 + 1.5 + 1  # the window, a part (¼ window: 1 tick), the journal
    assert rec.manifest.start_time is not None  # RFC 3339 as Go writes it: a fraction's trailing zeros dropped
    assert datetime.fromisoformat(rec.manifest.start_time) == rec.ticks()[0].time


def test_readers_on_the_live_directory_see_whole_ticks_and_leave_the_recorder_alone(
    server: FakeServer, tmp_path: Path
) -> None:
    """Folding every tick (the most churn a reader can meet): info, replay and open_recording on the live
    directory read consistent snapshots; the recorder loses no tick and meets no lock error. A replay taken
    while the recorder is stopped mid-flight equals, afterwards, a replay of the same ticks."""
    out = tmp_path / "rec"
    proc = start_record(_args(server, out, "--retain", "1h"), env={"EVICTLENS_FOLD_EVERY_TICKS": "1"})
    hard = ["--eviction-hard", "memory.available<1000Gi"]  # every tick under pressure: rankings, pods in force
    try:
        status = StderrLines(proc)
        wait_for(lambda: len(_live_ticks(out)) >= 3 or proc.poll() is not None, what="three ticks")
        for _ in range(6):
            _check_whole(open_recording(out))
        info = run_evictlens("info", str(out))
        assert info.returncode == 0, info.stderr
        assert "live recording (its recorder is writing it)" in info.stdout + info.stderr
        replay = run_evictlens("replay", str(out), "--json", *hard)
        assert replay.returncode in (0, 1), replay.stderr
        explain = run_evictlens("explain", str(out), "--node", "node-001", "--tick", "1", *hard)
        assert explain.returncode in (0, 1), explain.stderr
        packed = run_evictlens("pack", str(out), "-o", str(tmp_path / "live.tar"))
        assert packed.returncode == 0, packed.stderr
        assert run_evictlens("unpack", str(tmp_path / "live.tar"), "-o", str(tmp_path / "unpacked")).returncode == 0
        _check_whole(open_recording(tmp_path / "unpacked"))
        proc.send_signal(signal.SIGSTOP)  # wherever it is: mid-fold, mid-frame
        try:
            frozen = run_evictlens("replay", str(out), "--json", "--jobs", "2", *hard)  # workers reopen the snapshot
            cut = max(_live_ticks(out))
        finally:
            proc.send_signal(signal.SIGCONT)
        assert frozen.returncode in (0, 1), frozen.stderr
        wait_for(lambda: max(_live_ticks(out)) >= cut + 3 or proc.poll() is not None, what="three more ticks")
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        kill_quietly(proc)
    err = status.text()
    assert proc.returncode == 0, err
    assert "another evictlens" not in err and "Traceback" not in err
    final = open_recording(out)
    assert _check_whole(final)[0] == 0  # nothing dropped (an hour's window), nothing lost
    after = _replay_of_the_first_ticks(final, cut, tmp_path / "cut", hard)
    assert _results(frozen.stdout) == _results(after)


def _replay_of_the_first_ticks(rec: Recording, last: int, dest: Path, flags: list[str]) -> str:
    """Replay of ticks 0..last of a finished recording (the objects observed before tick last+1 started)."""
    times = rec.scan_ticks().group_by("tick").agg(pl.col("time").first()).collect()
    later = times.filter(pl.col("tick") == last + 1)["time"]
    tables: dict[str, pl.DataFrame] = {}
    for name, schema in ALL_SCHEMAS.items():
        df = rec.scan(name).collect()
        if "tick" in schema:
            df = df.filter(pl.col("tick") <= last)
        elif "observed" in schema and later.len():
            df = df.filter(pl.col("observed") < later[0])
        tables[name] = df
    manifest = Manifest(**{k: v for k, v in asdict(rec.manifest).items() if k not in ("counts", "finalized")})
    w = RecordingWriter(dest, manifest)
    w.publish_part(tables)
    w.finalize()
    res = run_evictlens("replay", str(dest), "--json", *flags)
    assert res.returncode in (0, 1), res.stderr
    return res.stdout


def _results(text: str) -> dict[str, Any]:
    doc = dict(json.loads(text))
    for key in ("recording", "notes"):
        doc.pop(key, None)
    return doc


def test_sigkill_restarts_with_the_same_arguments_lose_no_finished_tick(server: FakeServer, tmp_path: Path) -> None:
    """Three kills at random moments (folding every 2 ticks, so some land mid-fold); each restart has the same
    arguments (a Deployment's pod), resumes without --append, marks the pause, and takes over the lock the
    killed recorder left behind. Every tick a reader saw finished before a kill is in the final recording."""
    rng = random.Random(20261127)
    out = tmp_path / "rec"
    args = _args(server, out, "--retain", "1h")
    env = {"EVICTLENS_FOLD_EVERY_TICKS": "2"}
    seen: set[int] = set()
    resumed = 0
    for run in range(4):
        proc = start_record(args, env=env)
        try:
            status = StderrLines(proc)
            if run:
                wait_for(lambda s=status, p=proc: s.has("resumed the recording") or p.poll() is not None, what="resume")
                resumed += status.has("resumed the recording")
            goal = len(seen) + 2
            wait_for(
                lambda p=proc, g=goal: len(_live_ticks(out)) >= g or p.poll() is not None, what=f"ticks of run {run}"
            )
            assert proc.poll() is None, status.text()
            if run == 3:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
                break
            time.sleep(rng.random() * 0.8)  # a random kill moment, not a wait for progress
            seen |= set(_live_ticks(out))
        finally:
            kill_quietly(proc)
        assert (out / fmt.LOCK).exists() and fmt.live_writer(out) is None  # stale: nobody holds it
    assert proc.returncode == 0, status.text()
    assert resumed == 3
    final = open_recording(out)
    ticks = _check_whole(final)
    assert ticks[0] == 0 and seen <= set(ticks)
    gaps = final.scan_ticks().filter(pl.col("error").str.starts_with(RESTARTED)).collect()
    assert 1 <= gaps["tick"].n_unique() <= 3 and not gaps["ok"].any()


def test_two_recorders_on_one_directory_never_both_write(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    args = _args(server, out, "--retain", "1h")
    first = start_record(args)
    try:
        status = StderrLines(first)
        wait_for(lambda: len(_live_ticks(out)) >= 2 or first.poll() is not None, what="two ticks")
        second = run_record(args)
        assert second.returncode == 2
        (line,) = second.stderr.strip().splitlines()
        assert f"another evictlens is writing this recording (pid {first.pid})" in line
        before = max(_live_ticks(out))
        wait_for(lambda: max(_live_ticks(out)) >= before + 2 or first.poll() is not None, what="more ticks")
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    finally:
        kill_quietly(first)
    assert first.returncode == 0, status.text()
    _check_whole(open_recording(out))


def test_a_full_disk_shrinks_the_window_says_so_and_keeps_recording(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    limit = ret.RESERVE_MIN_BYTES + 80_000
    env = {ret.DISK_LIMIT_ENV: str(limit), "EVICTLENS_FOLD_EVERY_TICKS": "2"}
    proc = start_record(_args(server, out, "--retain", "1h"), env=env)
    try:
        status = StderrLines(proc)
        wait_for(lambda: status.has("disk full: dropped the oldest part") or proc.poll() is not None, what="a shrink")
        assert proc.poll() is None, status.text()
        after = max(_live_ticks(out))
        wait_for(lambda: max(_live_ticks(out)) >= after + 3 or proc.poll() is not None, what="ticks after the shrink")
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        kill_quietly(proc)
    err = status.text()
    assert proc.returncode == 0, err
    line = next(x for x in err.splitlines() if "disk full: dropped" in x)
    assert (
        line.startswith("evictlens record: disk full: dropped the oldest part (p")
        and "the window now starts at" in line
    )
    rec = open_recording(out)
    ticks = _check_whole(rec)
    assert ticks[0] > 0
    assert fmt.dir_bytes(out) <= limit
    first = rec.ticks("node-000")[0].time
    assert len(rec.pods_at("node-000", first)) == 4


def test_bad_input_is_one_line_and_exit_2(server: FakeServer, tmp_path: Path) -> None:
    res = run_record(_args(server, tmp_path / "rec", "--interval", "1s", "--retain", "1.5s"))
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert "--retain: 1.5s is shorter than two intervals (--interval 1s)" in line
    assert not (tmp_path / "rec").exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = run_record(_args(server, blocker / "rec", "--retain", "1h"))
    assert res.returncode == 2
    (line,) = res.stderr.strip().splitlines()
    assert str(blocker / "rec") in line and "cannot write while creating the recording" in line
