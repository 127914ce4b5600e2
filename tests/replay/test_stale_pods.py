"""A replay says where the recorder had no fresh pod list (``record --kubelet-direct`` with slow kubelets)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from recbuild import T0, micros, node_object, pods, summary_at

from recordings import format as fmt
from recordings.reader import open_recording
from recordings.recorder import PODS_MISSING, PODS_STALE
from recordings.writer import RecordingWriter
from replay.engine import replay_recording


def test_ticks_with_stale_or_missing_pods_are_counted_in_a_note(tmp_path: Path) -> None:
    writer = RecordingWriter(tmp_path / "rec", fmt.Manifest(source="import"))
    writer.observe("node", node_object(), observed=micros(T0), node="kind-worker")
    for pod in pods():
        writer.observe("pod", pod, observed=micros(T0), node="kind-worker")
    notes = [
        None,
        f"{PODS_STALE}: no fresh /pods list (timeout); the pods are as listed at tick 0",
        f"{PODS_MISSING}: no /pods list from the kubelet yet (timeout)",
        None,
    ]
    for i, note in enumerate(notes):
        when = T0 + timedelta(seconds=10 * (i + 1))
        tick = writer.begin_tick(micros(when))
        tick.add_summary("kind-worker", summary_at(when, 4 << 30), scraped=micros(when))
        tick.tables["ticks"]["error"][-1] = note  # as the recorder notes an ok tick
        writer.commit(tick)
    writer.finalize()
    rec = open_recording(tmp_path / "rec")
    assert rec.unfresh_pods() == {"kind-worker": (1, 1)}
    result = replay_recording(rec)
    assert result.nodes[0].passes == 4
    (note,) = [n for n in result.notes if "no fresh pod list" in n]
    assert note.startswith("kind-worker: the recorder had no fresh pod list at 2 of its passes (1 stale, 1 missing)")
