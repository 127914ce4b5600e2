"""Issue 28 item 8: an output path that cannot be created (under /proc, below a file) is bad input in one line for
every command that writes one, not an internal error; nothing is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars"


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("outpaths") / "rec"
    assert main(["import", "-o", str(out), str(SAMPLE / "summary.json"), str(SAMPLE / "pods.json")]) == 0
    return out


@pytest.mark.parametrize(
    ("argv", "target", "said"),
    [
        (["replay", "REC", "-o"], "/proc/evictlens-out", "cannot create the output there"),
        (["whatif", "REC", "--eviction-hard", "memory.available<1Gi", "-o"], "/proc/evictlens-out", "cannot create"),
        (
            ["tune", "REC", "--memory-hard", "1Gi", "--memory-soft", "none", "-o"],
            "/proc/evictlens-out",
            "cannot create",
        ),
        (["pack", "REC", "-o"], "/proc/evictlens.tar", "cannot create the file there"),
        (["replay", "REC", "-o"], "FILE/below", "a parent is not a directory"),
    ],
)
def test_an_output_that_cannot_be_created_is_one_line_exit_2(
    rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], target: str, said: str
) -> None:
    (tmp_path / "file").write_text("x")
    target = target.replace("FILE", str(tmp_path / "file"))
    capsys.readouterr()
    assert main([*(str(rec) if a == "REC" else a for a in argv), target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and target in err and "internal error" not in err, err


def test_unpack_into_proc_is_one_line_exit_2(rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", str(rec), "-o", str(tmp_path / "r.evictlens.tar")]) == 0
    capsys.readouterr()
    assert main(["unpack", str(tmp_path / "r.evictlens.tar"), "-o", "/proc/evictlens-unpacked"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot create the directory there" in err, err
