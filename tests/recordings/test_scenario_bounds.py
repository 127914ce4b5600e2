"""Issue 28 items 1 and 8: nothing a scenario names makes evictlens read or allocate without limit. /dev/zero,
a sparse 2 GB file, a series file that never ends and a 342-byte YAML alias bomb are one line, exit 2, run here
under a 2 GB memory limit; a capacity past int64 and a file of NUL bytes are bad input, not internal errors."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
from rec_support import REPO, child_env

BUNDLED = REPO / "recordings" / "scenarios" / "bundled" / "container-limit.yaml"
LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi", strict=True)
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _scenario(path: Path | str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay.cli", "scenario", str(path), "-o", str(out)],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limit_memory,
    )


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], *said: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "internal error" not in proc.stderr, proc.stderr
    for text in said:
        assert text in proc.stderr, proc.stderr


def test_a_scenario_of_dev_zero_is_refused_after_its_bound(tmp_path: Path) -> None:
    _one_line_exit_2(_scenario("/dev/zero", tmp_path / "rec"), "/dev/zero", "MiB a scenario file may have")
    assert not (tmp_path / "rec").exists()


def test_a_sparse_two_gigabyte_scenario_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.truncate(2 << 30)
    _one_line_exit_2(_scenario(big, tmp_path / "rec"), "big.yaml", "MiB a scenario file may have")


def test_a_series_file_that_never_ends_is_refused_naming_the_field(tmp_path: Path) -> None:
    text = BUNDLED.read_text().replace(
        "worker: {memory: {ramp: {from: 150Mi, to: 750Mi, over: 100s}}}",
        "worker: {memory: {series: {file: /dev/zero}}}",
    )
    assert "/dev/zero" in text
    (tmp_path / "s.yaml").write_text(text)
    _one_line_exit_2(_scenario(tmp_path / "s.yaml", tmp_path / "rec"), "series file /dev/zero", "usage.worker")


def test_a_yaml_alias_bomb_is_refused_before_it_is_built(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(LAUGHS)
    assert len(LAUGHS) < 400
    _one_line_exit_2(_scenario(tmp_path / "bomb.yaml", tmp_path / "rec"), "aliases expand", "alias bomb")


def test_an_alias_bomb_given_as_a_summary_is_refused_too(tmp_path: Path) -> None:
    from kube.errors import InputError
    from recordings.documents import load_document

    (tmp_path / "summary.yaml").write_text(LAUGHS)
    with pytest.raises(InputError, match="alias bomb"):
        load_document(tmp_path / "summary.yaml")


def test_a_few_aliases_in_a_hand_written_file_still_load(tmp_path: Path) -> None:
    from recordings.documents import load_document

    (tmp_path / "pods.yaml").write_text("common: &c {cpu: 100m, memory: 1Gi}\na: {requests: *c}\nb: {limits: *c}\n")
    assert load_document(tmp_path / "pods.yaml")["b"] == {"limits": {"cpu": "100m", "memory": "1Gi"}}


@pytest.mark.parametrize("capacity", ["1e400", "99999Ei", "1e99999999"])
def test_a_capacity_past_int64_is_bad_input_naming_its_field(tmp_path: Path, capacity: str) -> None:
    (tmp_path / "s.yaml").write_text(
        BUNDLED.read_text().replace("memory: 4Gi, ephemeral", f"memory: {capacity}, ephemeral")
    )
    _one_line_exit_2(_scenario(tmp_path / "s.yaml", tmp_path / "rec"), "nodes[0].capacity.memory", "int64")


def test_a_file_of_nul_bytes_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "nul.yaml").write_bytes(b"\0" * 1000)
    _one_line_exit_2(_scenario(tmp_path / "nul.yaml", tmp_path / "rec"), "nul.yaml", "not valid YAML")
