"""``evictlens tune`` end to end on a small bundled scenario: exit statuses, ``-o`` written whole (0600) in the
layout ``whatif -o`` writes so the TUI's loader opens every candidate, ``--help``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recordings.scenarios import bundled_names
from replay.cli import main

QOS = ["tune", "qos-contest", "--memory-hard", "100Mi,1Gi", "--memory-soft", "none", "--jobs", "1"]


def test_tune_on_a_bundled_scenario_writes_every_candidate_as_the_tui_opens_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.results_dir import open_results_dir

    out = tmp_path / "out"
    assert main([*QOS, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "tune.json").read_text())
    labels = [c["label"] for c in doc["candidates"]]
    assert labels == ["current settings: memory.available<500Mi (hard)", "hard 100Mi, no soft", "hard 1Gi, no soft"]
    low, high = doc["candidates"][1], doc["candidates"][2]
    assert low["kernel_kills"] >= 1 and not low["eligible"]  # 100Mi: the kernel gets there first
    assert high["kernel_kills"] == 0 and doc["recommendation"]["index"] == 2 and doc["front"] == [2]
    assert high["withheld_bytes"] - low["withheld_bytes"] == (1 << 30) - (100 << 20)  # the hard threshold moved
    assert sorted(p.name for p in out.iterdir()) == [
        "compare.json",
        "compare.parquet",
        "recommended.yaml",
        "tune.json",
        "variant-0",
        "variant-1",
        "variant-2",
    ]
    for path in out.rglob("*"):
        assert (path.stat().st_mode & 0o777) == (0o700 if path.is_dir() else 0o600), path
    assert json.loads((out / "compare.json").read_text())["format"] == "evictlens-whatif"
    for i, label in enumerate(labels):
        view = open_results_dir(out / f"variant-{i}")
        assert view.label == (label if i else "current settings")  # the request's label; the row adds the thresholds
    assert "evictlens replay --sample qos-contest --config FILE" in text
    assert f"evictlens tui {out}/variant-2" in text
    # an earlier tune output is replaced whole
    assert main([*QOS, "--memory-hard", "1Gi", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("variant-")) == ["variant-0", "variant-1"]


def test_no_candidate_without_a_kernel_kill_is_a_finding_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tune", "qos-contest", "--memory-hard", "100Mi", "--memory-soft", "none", "--jobs", "1"]) == 1
    text = capsys.readouterr().out
    assert "no candidate has 0 kernel kills" in text and "KubeletConfiguration" not in text
    out = tmp_path / "out"
    assert main(["tune", "qos-contest", "--memory-hard", "100Mi", "--memory-soft", "none", "-o", str(out)]) == 1
    doc = json.loads((out / "tune.json").read_text())
    assert doc["recommendation"] is None and not (out / "recommended.yaml").exists()


def test_output_over_something_else_is_refused_and_a_failed_write_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    assert main([*QOS, "-o", str(busy)]) == 2
    assert "is not a tune output directory" in capsys.readouterr().err
    assert [p.name for p in busy.iterdir()] == ["mine.txt"]

    import replay.results_io

    calls = []

    def failing(result: object, out: Path) -> None:
        calls.append(out)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(result, out)  # type: ignore[arg-type]

    real = replay.results_io.write
    monkeypatch.setattr(replay.results_io, "write", failing)
    assert main([*QOS, "-o", str(tmp_path / "new")]) != 0  # the CLI edge's internal-error status
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]  # no new/, no staging directory left


def test_tune_help_lists_the_search_flags_and_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["tune", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--memory-hard", "--nodefs-hard", "--memory-soft", "--soft-grace", "--min-reclaim"):
        assert flag in text
    for flag in ("--max-pod-grace", "--kube-reserved", "--system-reserved", "--max-candidates", "-o"):
        assert flag in text
    assert "0 a recommendation, 1 none with 0 kernel kills, 2 bad input" in " ".join(text.split())
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "tune" in capsys.readouterr().out


@pytest.mark.skipif("no-system-reserved" not in bundled_names(), reason="the bundled no-system-reserved scenario")
def test_the_starved_kubelets_not_ready_is_a_column_and_the_pick_has_none(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tune", "no-system-reserved", "--memory-hard", "100Mi,500Mi", "--memory-soft", "none", "--jobs", "1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "node NotReady" in text and "the node stops posting status, worker-1 Ready Unknown at" in text
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    current, low, high = doc["candidates"]
    assert current["node_not_ready"] == 1 and low["node_not_ready"] == 1 and not low["eligible"]
    assert high["node_not_ready"] == 0 and high["kernel_kills"] == 0 and doc["recommendation"]["index"] == 2


@pytest.mark.skipif("container-limit" not in bundled_names(), reason="the bundled container-limit scenario")
def test_kills_no_setting_changes_are_named_and_the_closest_candidates_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["tune", "container-limit", "--memory-hard", "100Mi,1Gi", "--memory-soft", "none", "--jobs", "1"]
    assert main(argv) == 1  # a container at its own limit: no eviction setting prevents it
    text = capsys.readouterr().out
    assert "no candidate is eligible: the closest" in text and "hard 1Gi, no soft" in text
    assert "happen at the same moment under every candidate and the current settings" in text
    assert "needs a higher limit" in text
