"""An incident's explanation on recordings whose outcome is known: the bundled jvm-spike scenario (memory runs out
between two passes, the kernel kills the JVM, no eviction) and the sidecar-stress sample (one eviction). The
window is cut as the recorder cuts it, and the report is the engine's: the kernel's side, the smallest change
derived from the recorded signal and checked by a replay, the real message against the predicted one."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from flight.explain import explain_incident
from flight.incident import Incident, from_evictions, from_kills
from flight.report_text import render
from flight.window import cut_window
from recordings.reader import Recording, open_recording, to_micros
from replay.cli import main

MI = 1024 * 1024


def _window(rec: Recording, inc: Incident, dest: Path) -> Recording:
    assert cut_window(rec, dest, inc.node, inc.time - 1800 * 10**6, inc.time + 60 * 10**6, note="test window") > 0
    return open_recording(dest)


def _rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return [
        {**r, "observed": to_micros(r["observed"]), "time": to_micros(r["time"]) if r["time"] else None}  # type: ignore[arg-type]
        for r in rows
    ]


@pytest.mark.parametrize("kind", ["OOMKilled", "SystemOOM"])
def test_a_kill_between_two_passes_gets_the_threshold_that_evicts_before_it(
    jvm_spike_rec: Path, tmp_path: Path, kind: str
) -> None:
    rec = open_recording(jvm_spike_rec)
    (inc,) = [i for i in from_kills(_rows(rec.kernel_events())) if i.kind == kind]
    doc = explain_incident(_window(rec, inc, tmp_path / "w"), inc, window=(inc.time, inc.time))
    kernel = doc["kernel"]
    assert kernel["cause"].startswith("node:")
    (race,) = kernel["memory_ran_out_between_passes"]
    last = kernel["passes_before"][-1]
    assert race["from"] == last["time"] and race["kills_between"] == 1
    change = doc["smallest_change"]
    needed = last["available"] // MI + 1
    assert change["setting"].endswith(f"memory.available<{needed}Mi'")
    assert needed * MI > last["available"] >= (needed - 1) * MI  # the smallest whole Mi the last pass is below
    assert "before the kill" in change["engine_check"] and "evicts shop/orders-jvm" in change["engine_check"]
    assert "frees enough memory" in change["holds"]
    if kind == "OOMKilled":
        assert "(the pod the kernel killed)" in change["engine_check"]
        assert kernel["qos"] == "Burstable" and 3 <= kernel["oom_score_adj"] <= 999
        assert "GetContainerOOMScoreAdjust as kubelet 1.33" in kernel["oom_score_adj_rule"]
    else:
        assert kernel["victim"] == "java" and kernel["oom_score_adj"] is None
    assert doc["explanation"]["node"] == "worker-1"
    text = render(
        {
            **doc,
            "incident": inc.to_json() | {"who": inc.who},
            "path": "p",
            "pack": "p",
            "window": {"from": "a", "to": "b", "until": "b", "complete": True},
        }
    )
    assert "smallest setting change:" in text and f"memory.available<{needed}Mi" in text


def test_an_eviction_is_predicted_with_its_message_and_the_threshold_that_would_not_evict(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    assert main(["scenario", "--sample", "sidecar-stress", "-o", str(out)]) == 0
    rec = open_recording(out)
    (inc,) = from_evictions(_rows(rec.evictions()))
    doc = explain_incident(_window(rec, inc, tmp_path / "w"), inc, window=(inc.time, inc.time))
    assert doc["same_message"] is True and doc["predicted"]["message"] == inc.message == doc["real_message"]
    assert doc["ranking"][0]["decided_by"] == "evicted"
    observed = doc["predicted"]["observed_available"]
    change = doc["smallest_change"]
    assert change["setting"].endswith(f"memory.available<{observed // MI}Mi'")
    assert "does not evict default/alloc-sidecars" in change["engine_check"]


def test_an_after_window_left_open_is_finished_by_the_next_start_and_said_at_stop(tmp_path: Path) -> None:
    """The recorder killed before an incident's after-window ended: the next start reads report.json
    (window.complete false) and makes it again; a stop before the window ends finishes it with what there is."""
    from flight.recorder import FlightOptions, FlightRecorder
    from flight.store import PACK
    from recordings.recorder.hooks import StoredTick

    root = tmp_path / "rec"
    assert main(["scenario", "--sample", "sidecar-stress", "-o", str(root)]) == 0
    rows = _rows(open_recording(root).evictions())
    said: list[str] = []
    opts = FlightOptions(before_s=60, after_s=600, max_incidents=10, max_bytes=1 << 30)
    first = FlightRecorder(root, opts, log=said.append)
    (inc,) = from_evictions(rows)
    first.tick_stored(StoredTick(root, 4, inc.time, tuple(rows), ()))
    first._jobs.put(None)  # as if killed once the incident is out: no stop, the after-window still open
    assert first._thread is not None
    first._thread.join(120)
    (path,) = first.store.published()
    doc = orjson.loads((path / "report.json").read_bytes())
    assert doc["window"]["complete"] is False and (path / PACK).is_file()
    assert sum("incident Evicted default/alloc-sidecars" in line for line in said) == 1

    again = FlightRecorder(root, opts, log=said.append)
    again.tick_stored(StoredTick(root, 5, inc.time + 1, tuple(rows), ()))  # the same rows: no second incident
    assert list(again.pending) == [path.name]
    again.stopped()
    assert [p.name for p in again.store.published()] == [path.name]
    doc = orjson.loads((path / "report.json").read_bytes())
    assert doc["window"]["complete"] is False and "stopped before the after-window ended" in doc["window"]["note"]
    assert doc["first_published"] <= doc["generated"] and doc["same_message"] is True
    assert doc["revised"] is False  # the same conclusion: no revision said, none posted
    assert sum("incident Evicted" in line for line in said) == 1, said


def test_an_incidents_directory_that_cannot_be_made_is_said_once_and_the_recording_goes_on(tmp_path: Path) -> None:
    from flight.recorder import FlightOptions, FlightRecorder
    from recordings.recorder.hooks import StoredTick

    root = tmp_path / "rec"
    assert main(["scenario", "--sample", "sidecar-stress", "-o", str(root)]) == 0
    (root / "incidents").write_text("in the way\n")
    rows = tuple(_rows(open_recording(root).evictions()))
    said: list[str] = []
    hook = FlightRecorder(root, FlightOptions(60, 0, 10, 1 << 30), log=said.append)
    for index in range(3):
        hook.tick_stored(StoredTick(root, index, 0, rows, ()))
    hook.stopped()
    assert len(said) == 1 and said[0].startswith("no incidents: cannot create") and "goes on" in said[0], said


def test_one_incident_per_evicted_pod_and_none_for_a_pod_refused_at_admission() -> None:
    base = {"node": "n1", "namespace": "ns", "name": "web-1", "uid": "u1", "reason": "Evicted", "observed": 5}
    rows = [
        {**base, "source": "pod", "message": "from the pod", "time": None},
        {**base, "source": "event", "message": "from the Event", "time": 3},
        {**base, "source": "pod", "uid": "u2", "name": "late", "message": "The node had condition: [DiskPressure]. "},
    ]
    (inc,) = from_evictions(rows)
    assert (inc.pod, inc.message, inc.time, inc.observed) == ("web-1", "from the Event", 3, 5)
    assert inc.name.endswith("-n1-evicted-web-1") and inc.key == "Evicted|n1|u1"


def test_a_report_is_revised_only_when_its_conclusion_changes() -> None:
    from flight.recorder import _verdict

    doc = {
        "incident": {"kind": "Evicted", "who": "ns/web-1", "node": "n1", "time": "t"},
        "path": "/a",
        "same_message": True,
        "predicted": {"message": "m"},
    }
    assert _verdict(doc) == _verdict({**doc, "path": "/b", "generated": "later"})
    assert _verdict(doc) != _verdict({**doc, "same_message": False, "predicted": None})
