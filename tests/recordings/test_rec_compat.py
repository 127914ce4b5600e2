"""Every later evictlens reads every schema version it ever wrote: recordings written by old
writers are kept in ``tests/recordings/data`` (see ``make_v1_fixtures.py`` and ``make_v2_fixtures.py`` there)
and opened here."""

from __future__ import annotations

from pathlib import Path

import orjson
from rec_support import REPO, run_cli

from recordings.pack import unpack
from recordings.reader import open_recording
from recordings.summary_codec import project

DATA = Path(__file__).resolve().parent / "data"
SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"


def test_v1_import_fixture_reads_back(tmp_path: Path) -> None:
    unpack(DATA / "v1-import.evictlens.tar", tmp_path / "rec")
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.schema_version == 1 and rec.manifest.finalized
    assert rec.nodes() == ["kind-worker", "kind-worker2"]
    ticks = rec.ticks("kind-worker")
    assert [t.time.isoformat() for t in ticks] == [
        "2024-05-20T10:15:22+00:00",
        "2024-05-20T10:15:32+00:00",
        "2024-05-20T10:15:42+00:00",
    ]
    summary = orjson.loads((SAMPLE / "summary.json").read_bytes())
    assert rec.summary_at("kind-worker", ticks[2].index) == project(summary)
    assert len(list(rec.summaries("kind-worker2"))) == 2
    pods = rec.pods_at("kind-worker", ticks[0].time)
    assert sorted(p["metadata"]["name"] for p in pods) == ["alloc-sidecars", "kindnet-7xq2p", "kube-proxy-4m8rt"]
    config = rec.configz("kind-worker")
    assert config is not None and config["kubeletconfig"]["evictionHard"] == {"memory.available": "1.5Gi"}
    (ev,) = rec.evictions()
    assert (ev["name"], ev["node"], ev["message"]) == (
        "alloc-sidecars",
        "kind-worker",
        "The node was low on resource: memory.",
    )
    assert rec.count_rows() == rec.manifest.counts


def test_v1_crashed_fixture_reads_up_to_its_last_finished_tick(tmp_path: Path) -> None:
    unpack(DATA / "v1-crashed.evictlens.tar", tmp_path / "rec")
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.schema_version == 1 and not rec.manifest.finalized
    assert [t.index for t in rec.ticks("node-a")] == [0, 1, 2, 3, 4]
    gap = rec.ticks("node-b")[-1]
    assert (gap.index, gap.ok) == (4, False) and rec.summary_at("node-b", 4) is None
    assert len(rec.pods_at("kind-worker")) == 3  # the sample pods are bound to kind-worker


def test_info_on_v1_fixtures_exits_zero(tmp_path: Path) -> None:
    for name in ("v1-import", "v1-crashed"):
        unpack(DATA / f"{name}.evictlens.tar", tmp_path / name)
        res = run_cli("info", str(tmp_path / name))
        assert res.returncode == 0, res.stderr
        assert "schema v1" in res.stdout


def test_append_to_a_v1_recording_upgrades_it_to_the_current_schema_with_checksums(tmp_path: Path) -> None:
    from recordings import format as fmt

    unpack(DATA / "v1-crashed.evictlens.tar", tmp_path / "rec")
    res = run_cli(
        "import",
        f"{SAMPLE / 'summary.json'}@2024-05-20T10:16:30Z",
        "--node",
        "node-a",
        "-o",
        str(tmp_path / "rec"),
        "--append",
    )
    assert res.returncode == 0, res.stderr
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.schema_version == fmt.SCHEMA_VERSION and rec.manifest.finalized
    assert all((p / fmt.CHECKSUMS).is_file() for _f, _l, p in fmt.list_parts(tmp_path / "rec"))
    assert [t.index for t in rec.ticks()] == [0, 1, 2, 3, 4, 5]  # the tick numbers continue
    assert [t.index for t in rec.ticks("kind-worker")] == [5]


def test_skip_bad_and_notes_on_the_v1_crashed_fixture(tmp_path: Path) -> None:
    unpack(DATA / "v1-crashed.evictlens.tar", tmp_path / "rec")
    rec = open_recording(tmp_path / "rec", skip_bad=True)
    assert rec.skipped == []
    assert any(n.startswith("torn journal tail ignored: j000002.log") for n in rec.notes), rec.notes
    assert any("last finished tick 4" in n for n in rec.notes), rec.notes
    res = run_cli("info", str(tmp_path / "rec"), "--verify")
    assert res.returncode == 0, res.stderr
    assert "schema v1 has no checksums" in res.stdout


def test_v2_import_fixture_reads_back_with_no_kernel_events(tmp_path: Path) -> None:
    """A v2 recording has no kernel_events table: it reads as having no kernel kills, even though its pods show an
    OOMKilled lastState (kills are recorded as they are observed, never guessed afterwards)."""
    unpack(DATA / "v2-import.evictlens.tar", tmp_path / "rec")
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.schema_version == 2 and rec.manifest.finalized
    assert rec.kernel_events() == []
    assert rec.scan("kernel_events").collect().is_empty()
    assert [e["name"] for e in rec.evictions()] == ["alloc-sidecars"]
    assert sorted(e["reason"] for e in rec.events()) == ["Evicted", "SystemOOM"]  # imports kept every event
    assert rec.count_rows() == rec.manifest.counts
    res = run_cli("info", str(tmp_path / "rec"), "--verify")
    assert res.returncode == 0, res.stderr
    assert "schema v2" in res.stdout


def test_append_to_a_v2_recording_upgrades_it_and_records_kernel_events_from_then_on(tmp_path: Path) -> None:
    from recordings import format as fmt

    unpack(DATA / "v2-import.evictlens.tar", tmp_path / "rec")
    pods = orjson.loads((SAMPLE / "pods.json").read_bytes())
    pod = next(p for p in pods["items"] if p["metadata"]["name"] == "alloc-sidecars")
    pod["status"]["containerStatuses"] = [
        {
            "name": "el2",
            "restartCount": 2,
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2024-05-20T10:16:20Z"}},
        }
    ]
    (tmp_path / "pods.json").write_bytes(orjson.dumps(pods))
    res = run_cli(
        "import",
        f"{SAMPLE / 'summary.json'}@2024-05-20T10:16:30Z",
        str(tmp_path / "pods.json"),
        "-o",
        str(tmp_path / "rec"),
        "--append",
    )
    assert res.returncode == 0, res.stderr
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.schema_version == fmt.SCHEMA_VERSION and rec.manifest.finalized
    (kill,) = rec.kernel_events()
    assert (kill["kind"], kill["name"], kill["container"], kill["exit_code"]) == (
        "OOMKilled",
        "alloc-sidecars",
        "el2",
        137,
    )
