"""``info`` counts a pod evicted once as one eviction (its Evicted Event and its Failed status are two
records), and pods refused at admission apart."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path

import pytest
from recbuild import T0, Observation, Plan, Tick, evicted_event, failed, pods, sidecar_recording, summary_at, write

from recordings.reader import open_recording
from replay.cli import main


def test_info_counts_one_eviction_once_and_rejections_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert len(open_recording(rec).evictions()) == 2  # the Event and the pod status of one eviction
    assert main(["info", str(rec), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert (counts["evictions"], counts["eviction_records"], counts["admission_rejections"]) == (1, 2, 0)
    assert main(["info", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "evictions          1" in out and "counts do not match" not in out


def test_info_counts_an_admission_rejection_apart(tmp_path: Path) -> None:
    late = copy.deepcopy(pods()[0])
    late["metadata"].update(name="late", uid="late-uid")
    refused = "The node had condition: [MemoryPressure]. "
    plan = Plan(
        ticks=[Tick(T0, {"kind-worker": summary_at(T0, 4 << 30)})],
        objects=[
            Observation(T0 + timedelta(seconds=1), "pod", failed(late, refused)),
            Observation(T0 + timedelta(seconds=1), "event", evicted_event(late, refused, T0 + timedelta(seconds=1))),
        ],
    )
    counts = open_recording(write(tmp_path / "rec", plan)).eviction_counts()
    assert counts == {"evictions": 0, "admission_rejections": 1}
