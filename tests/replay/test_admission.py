"""A pod refused at admission under node pressure (reason Evicted, ``The node had condition: [...]. ``) is no
eviction: scored apart from the real evictions, and counted on its own."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

import pytest
from recbuild import (
    CONFIGZ,
    LOW,
    MESSAGE_1_30,
    T0,
    Observation,
    Plan,
    Tick,
    evicted_event,
    failed,
    node_object,
    pods,
    summary_at,
    write,
)

from recordings.reader import open_recording
from replay.engine import replay_recording
from replay.matching import admission_rejections, is_admission_rejection, real_evictions
from replay.replay_report import ground_truth_summary, print_result
from replay.results_io import load
from replay.results_io import write as write_results

REFUSED = "The node had condition: [MemoryPressure]. "


def _recording(root: Path) -> Path:
    """alloc-sidecars is evicted for real at the first low sample; a pod that arrives 5 s later is refused
    (its status and its Event both say Evicted, with the admission message)."""
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for p in pods():
        plan.objects.append(Observation(start, "pod", p))
    plan.objects.append(Observation(start, "node", node_object()))
    plan.objects.append(Observation(start, "configz", CONFIGZ, node="kind-worker"))
    for i, low in enumerate((False, False, True, True, True)):
        sampled = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(sampled, {"kind-worker": summary_at(sampled, LOW if low else 4 << 30)}))
    when = T0 + timedelta(seconds=21)
    victim = pods()[0]
    plan.objects += [
        Observation(when, "pod", failed(victim, MESSAGE_1_30)),
        Observation(when, "event", evicted_event(victim, MESSAGE_1_30, when)),
    ]
    late = copy.deepcopy(victim)
    late["metadata"].update(name="late-comer", uid="late-uid")
    refused_at = T0 + timedelta(seconds=26)
    plan.objects += [
        Observation(refused_at, "pod", failed(late, REFUSED)),
        Observation(refused_at, "event", evicted_event(late, REFUSED, refused_at)),
    ]
    return write(root, plan)


def test_admission_rejection_message_is_recognised() -> None:
    assert is_admission_rejection("The node had condition: [DiskPressure]. ")
    assert not is_admission_rejection(MESSAGE_1_30)
    assert not is_admission_rejection(None)


def test_admission_rejection_is_not_a_real_eviction_but_is_counted_apart(tmp_path: Path) -> None:
    rec = open_recording(_recording(tmp_path / "rec"))
    assert [r.pod for r in real_evictions(rec)] == ["alloc-sidecars", "alloc-sidecars"]
    (refused,) = admission_rejections(rec)  # the pod row and its Event: one pod
    assert (refused.pod, refused.message) == ("late-comer", REFUSED)
    assert all(r.pod != "late-comer" for r in real_evictions(rec))
    assert [row["name"] for row in rec.evictions(admission=True)] == ["late-comer", "late-comer"]


def test_replay_scores_the_real_eviction_only_and_notes_the_rejection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = replay_recording(open_recording(_recording(tmp_path / "rec")), version="1.30")
    assert [m.real.pod for m in result.matches] == ["alloc-sidecars"]
    assert result.matches[0].same_pod
    assert all(n.horizon is None or "late-comer" not in n.horizon_reason for n in result.nodes)
    assert any("1 pod refused at admission" in note for note in result.notes)
    print_result(result)
    out = capsys.readouterr().out
    assert "1 real eviction: 1 matched by the replay, 1 with the exact message" in out
    assert "late-comer" not in out.split("real evictions (ground truth)")[-1].split("note:")[0]


def test_admission_rejections_are_their_own_count_in_results_and_survive_a_round_trip(tmp_path: Path) -> None:
    rec = open_recording(_recording(tmp_path / "rec"))
    result = replay_recording(rec, version="1.30")
    assert [r.pod for r in result.admission_rejections] == ["late-comer"]  # filled by the one producer
    assert ground_truth_summary(result).endswith("; 1 admission rejection (not evictions, not scored)")
    write_results(result, tmp_path / "out")
    loaded = load(tmp_path / "out")
    assert [r.pod for r in loaded.admission_rejections] == ["late-comer"]
    assert loaded.admission_rejections[0].message == REFUSED
