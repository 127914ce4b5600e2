"""The rolling window in the writer (``record --retain``, FORMAT.md §3.3), driven in-process with real summaries:
whole parts leave the window, the objects still in force are carried into the base part, a full disk drops the
oldest part first (the test seam ``EVICTLENS_TEST_DISK_BYTES``), and a resumed writer marks the pause."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from rec_support import summary_files

from kube.errors import RecordingError
from recordings import format as fmt
from recordings import retention as ret
from recordings.format import Manifest
from recordings.reader import Recording, open_recording
from recordings.writer import RESTARTED, RecordingWriter

T0 = 1_716_200_122_000_000
STEP = 10_000_000  # 10 s ticks


def _pod(name: str, node: str = "node-a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "priority": 0, "containers": [{"name": "c", "resources": {}}]},
        "status": {"phase": "Running", "qosClass": "BestEffort"},
    }


NODE = {"metadata": {"name": "node-a", "uid": "n-a"}, "status": {"nodeInfo": {"kubeletVersion": "v1.30.0"}}}
CONFIGZ = {"kubeletconfig": {"kind": "KubeletConfiguration", "evictionHard": {"memory.available": "100Mi"}}}


def _summary() -> dict[str, Any]:
    return dict(orjson.loads(summary_files()[0].read_bytes()))


def _writer(root: Path, *, retain: float | None, fold: int = 2, append: bool = False) -> RecordingWriter:
    w = RecordingWriter(root, Manifest(source="test"), retain=retain, append=append)
    w.fold_every = fold
    w.on_shrink = lambda _msg: None
    return w


def _ticks(w: RecordingWriter, first: int, count: int, summary: dict[str, Any]) -> None:
    for i in range(first, first + count):
        t = w.begin_tick(T0 + i * STEP)
        t.add_summary("node-a", summary, scraped=t.time)
        w.commit(t)


def _start(w: RecordingWriter) -> None:
    """Objects seen once at the start (they stay in force for ever) and one pod deleted at the start."""
    w.observe("node", NODE, observed=T0)
    w.observe("configz", CONFIGZ, node="node-a", observed=T0)
    for name in ("keep-1", "keep-2", "gone"):
        w.observe("pod", _pod(name), observed=T0)
    w.observe("pod", _pod("gone"), observed=T0 + 1, deleted=True)


def _tick_numbers(rec: Recording) -> list[int]:
    return sorted(rec.scan_ticks().collect()["tick"].unique().to_list())


def test_whole_parts_leave_the_window_and_the_objects_in_force_stay(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = _writer(root, retain=60.0)
    _start(w)
    _ticks(w, 0, 30, _summary())
    names = sorted(p.name for p in (root / "parts").iterdir() if not p.name.endswith(".tmp"))
    base = [n for n in names if n.startswith("p000000-")]
    assert len(base) == 1, names
    rec = Recording(root)  # this process holds the lock: read the files directly
    ticks = _tick_numbers(rec)
    assert ticks == list(range(ticks[0], 30)) and ticks[0] > 0
    span = (29 - ticks[0]) * STEP
    assert 60 * 1_000_000 <= span <= (60 + 2 * 10 + 10) * 1_000_000  # the window plus at most one part
    first = T0 + ticks[0] * STEP
    pods = sorted(p["metadata"]["name"] for p in rec.pods_at("node-a", first))
    assert pods == ["keep-1", "keep-2"]  # carried forward; the deleted one is not
    assert rec.node_object_at("node-a", first) is not None
    assert rec.configz("node-a", first) == CONFIGZ
    assert w.window_first == first and w.window_last == T0 + 29 * STEP
    assert w.parts_dropped > 0 and w.window_shrinks == 0
    assert w.bytes_on_disk == fmt.dir_bytes(root)
    assert (root / "parts" / ret.RESERVE).stat().st_size >= ret.RESERVE_MIN_BYTES
    assert orjson.loads((root / fmt.MANIFEST).read_bytes())["start_time"].startswith("2024-05-20")
    w.finalize()
    rec = open_recording(root)
    assert len(rec.parts) > 2  # not compacted: a rolling recording keeps parts it can drop whole
    assert not (root / "parts" / ret.RESERVE).exists()
    assert _tick_numbers(rec) == ticks
    assert rec.manifest.start_time is not None and rec.manifest.finalized


def test_a_crash_between_the_base_and_the_removal_reads_the_base_and_resuming_cleans_up(tmp_path: Path) -> None:
    """The base is renamed into place before the old parts go: nested parts, the widest wins."""
    root = tmp_path / "rec"
    w = _writer(root, retain=60.0)
    _start(w)
    _ticks(w, 0, 4, _summary())
    old = sorted(p for p in (root / "parts").iterdir() if p.is_dir())
    saved = tmp_path / "saved"
    shutil.copytree(old[0], saved / old[0].name)
    _ticks(w, 4, 20, _summary())
    assert not old[0].exists()
    shutil.copytree(saved / old[0].name, old[0])  # as if the writer died before removing it
    w.close()
    rec = open_recording(root)
    assert old[0] not in rec.parts and min(_tick_numbers(rec)) > 1
    w = _writer(root, retain=60.0, append=True)
    assert not old[0].exists()  # the nested part is removed on resume
    w.close()


def test_a_full_disk_drops_the_oldest_part_first_and_keeps_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "rec"
    limit = ret.RESERVE_MIN_BYTES + 600_000
    monkeypatch.setenv(ret.DISK_LIMIT_ENV, str(limit))
    said: list[str] = []
    w = _writer(root, retain=3600.0)
    w.on_shrink = said.append
    _start(w)
    _ticks(w, 0, 80, _summary())  # a retention of an hour: only the disk drops parts
    assert w.window_shrinks > 0 and said
    assert said[0].startswith("disk full: dropped the oldest part (p0000")
    assert "the window now starts at 2024-05-20T" in said[0] and "--retain 3600 s" in said[0]
    assert fmt.dir_bytes(root) <= limit
    rec = Recording(root)
    ticks = _tick_numbers(rec)
    assert ticks[-1] == 79 and ticks == list(range(ticks[0], 80)) and ticks[0] > 0
    first = T0 + ticks[0] * STEP
    assert sorted(p["metadata"]["name"] for p in rec.pods_at("node-a", first)) == ["keep-1", "keep-2"]
    assert w.window_first == first
    w.close()


def test_a_full_disk_without_retain_still_stops_saying_what_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "rec"
    monkeypatch.setenv(ret.DISK_LIMIT_ENV, "300000")
    w = _writer(root, retain=None)
    with pytest.raises(RecordingError) as err:
        _ticks(w, 0, 80, _summary())
    assert "disk full" in str(err.value) and "valid up to" in str(err.value)
    w.close()


def test_a_resumed_writer_marks_the_pause_and_forgets_objects_gone_meanwhile(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = _writer(root, retain=3600.0)
    _start(w)
    _ticks(w, 0, 3, _summary())
    w.close()  # as a SIGKILL leaves it: not finalized
    w = _writer(root, retain=3600.0, append=True)
    assert w.resumed and w.last_tick == 2
    assert not w.observe("pod", _pod("keep-1"))  # unchanged: not stored twice after a restart
    assert w.observe("node", NODE) is False
    assert w.forget_unseen(("node", "pod")) == 1  # keep-2 was not listed again: deleted meanwhile
    assert w.mark_restart(["node-a"], 10.0)  # T0 is in 2024: a long pause
    _ticks(w, 4, 1, _summary())
    w.close()
    rec = Recording(root)
    gap = rec.scan_ticks().filter(pl.col("tick") == 3).collect()
    assert gap.height == 1 and not gap["ok"][0] and gap["error"][0].startswith(f"{RESTARTED}: no recorder ran from ")
    assert gap["time"][0] - rec.ticks("node-a")[2].time == timedelta(seconds=10)  # the first slot missed
    assert [p["metadata"]["name"] for p in rec.pods_at("node-a")] == ["keep-1"]


def test_a_base_part_reads_in_a_reader_that_knows_nothing_of_it(tmp_path: Path) -> None:
    """No schema change: the base is an ordinary part holding only objects (v3 readers read it)."""
    root = tmp_path / "rec"
    w = _writer(root, retain=30.0)
    _start(w)
    _ticks(w, 0, 12, _summary())
    w.finalize()
    base = next(p for p in (root / "parts").iterdir() if p.name.startswith("p000000-"))
    assert sorted(f.name for f in base.iterdir()) == ["checksums.json", "objects.parquet"]
    assert orjson.loads((root / fmt.MANIFEST).read_bytes())["schema_version"] == 3
    assert open_recording(root).count_rows()["ticks"] < 12
