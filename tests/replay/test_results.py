"""The replay results model: pods at the stats' sample time, the results directory, explain at a moment."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import orjson
import polars as pl
import pytest
from recbuild import MESSAGE_1_30, POD_UID, sidecar_recording

from kube.errors import InputError
from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.results_io import FRAMES, load, to_document, write

RESULTS_MD = Path(__file__).resolve().parents[2] / "replay" / "RESULTS.md"


@pytest.mark.parametrize("tick_offset", [-1.0, 0.0, 0.5, 1.5, 2.0, 5.0, 9.5])
def test_the_pass_sees_the_pods_active_at_the_sample_time_in_every_timing(tmp_path: Path, tick_offset: float) -> None:
    """The kubelet evicts 1 s after sampling; the recorder's tick may start before or after the pod turned Failed."""
    rec = open_recording(sidecar_recording(tmp_path / "rec", tick_offset=tick_offset, failed_after=1.0))
    if tick_offset > 1.0:  # the hazard is real: at the tick's own time the pod is already Failed
        (failed,) = [
            p for p in rec.pods_at("kind-worker", rec.ticks("kind-worker")[2].time) if p["metadata"]["uid"] == POD_UID
        ]
        assert failed["status"]["phase"] == "Failed"
    result = replay_recording(rec, version="1.30")
    first = result.evictions[0]
    assert (first.pod, first.tick, first.message) == ("alloc-sidecars", 2, MESSAGE_1_30)
    (match,) = result.matches
    assert match.same_pod and match.same_message and match.within_interval and match.message_diff is None


def test_results_directory_holds_the_exact_message_annotations_and_ranking(tmp_path: Path) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "--kubelet-version", "1.30", "-o", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(["result.json", *(f"{n}.parquet" for n in FRAMES)])
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in out.iterdir())
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    ev = pl.read_parquet(out / "evictions.parquet").row(0, named=True)
    assert ev["message"] == MESSAGE_1_30 and ev["pod"] == "alloc-sidecars"
    annotations = {a["key"]: a["value"] for a in ev["annotations"]}
    assert annotations["offending_containers"] == "el1,el2,el3"
    ranking = pl.read_parquet(out / "rankings.parquet").filter(pl.col("eviction_id") == ev["eviction_id"])
    assert ranking.sort("rank")["pod"][0] == "alloc-sidecars"


def test_load_round_trips_the_results_directory(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    write(result, tmp_path / "out")
    back = load(tmp_path / "out")
    assert back.same_as(result)
    assert back.evictions[0].ranking == result.evictions[0].ranking and back.evictions[0].ranking


def test_json_prints_the_same_document_as_result_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "-o", str(tmp_path / "out"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((tmp_path / "out" / "result.json").read_text())


def _documented_columns(section: str) -> dict[str, str]:
    text = RESULTS_MD.read_text()
    block = text.split(f"### {section}", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z_]+)` \| `([^`]+)` \|", block, re.MULTILINE)}


@pytest.mark.parametrize("name", list(FRAMES))
def test_results_md_documents_every_column_of_every_file(tmp_path: Path, name: str) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    write(result, tmp_path / "out")
    schema = pl.read_parquet_schema(tmp_path / "out" / f"{name}.parquet")
    documented = _documented_columns(f"{name}.parquet")
    assert list(documented) == list(schema)
    assert documented == {k: str(v) for k, v in schema.items()}


def test_results_md_documents_every_key_of_result_json(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    doc = to_document(result)
    text = RESULTS_MD.read_text()
    keys = set(doc) | set(doc["nodes"][0]) | set(doc["evictions"][0]) | set(doc["matches"][0]) | set(doc["settings"])
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert missing == []


def test_load_refuses_an_unknown_schema_version_in_one_line(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    write(result, tmp_path / "out")
    doc = orjson.loads((tmp_path / "out" / "result.json").read_bytes())
    doc["schema_version"] = 99
    (tmp_path / "out" / "result.json").write_bytes(orjson.dumps(doc))
    with pytest.raises(InputError, match="schema version 99"):
        load(tmp_path / "out")


def test_writing_over_something_else_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not a results directory"):
        write(result, tmp_path / "busy")
    assert sorted(os.listdir(tmp_path)) == ["busy", "rec"]


def test_explain_at_first_eviction_prints_the_replays_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["explain", str(rec), "--at", "first-eviction", "--kubelet-version", "1.30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (eviction,) = doc["result"]["evictions"]
    assert eviction["message"] == MESSAGE_1_30
    assert doc["moment"].startswith("tick 2")
    assert "memory.available<1536Mi (hard)" in doc["manager_state"]["thresholds_first_observed"]


def test_explain_at_a_time_shows_the_condition_held_by_the_transition_period(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec", lows=(False, True, False, False))
    assert main(["explain", str(rec), "--node", "kind-worker", "--at", "2024-05-20T10:15:25Z"]) == 0
    out = capsys.readouterr().out
    assert "moment: tick 2" in out
    assert "MemoryPressure held by the pressure transition period until 2024-05-20T10:20:10+00:00" in out


def test_explain_at_a_tick_before_any_data_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["explain", str(rec), "--at", "2000-01-01T00:00:00Z"]) == 2
    err = capsys.readouterr().err
    assert "no recorded pass of kind-worker" in err and err.count("\n") == 1
