"""Issue 28 items 4, 11, 12: pack takes only the recording's own files (a journal up to its last whole frame);
unpack takes only a regular file whose entries are a recording's, none sparse, each the size its index says,
and an entry's name never reaches the terminal as control characters."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from replay.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars"


@pytest.fixture
def rec(tmp_path: Path) -> Path:
    out = tmp_path / "rec"
    assert main(["import", "-o", str(out), str(SAMPLE / "summary.json"), str(SAMPLE / "pods.json")]) == 0
    return out


def _one_line(capsys: pytest.CaptureFixture[str], *said: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    for text in said:
        assert text in err, err
    return err


def test_pack_leaves_out_what_is_not_the_recordings(rec: Path, tmp_path: Path) -> None:
    assert main(["pack", str(rec), "-o", str(tmp_path / "first.evictlens.tar")]) == 0
    os.replace(tmp_path / "first.evictlens.tar", rec / "old.evictlens.tar")  # an earlier pack left inside
    (rec / "parts" / "notes.txt").write_text("mine")
    assert main(["pack", str(rec), "-o", str(tmp_path / "r.evictlens.tar")]) == 0
    with tarfile.open(tmp_path / "r.evictlens.tar") as tar:
        names = tar.getnames()
    assert "old.evictlens.tar" not in names and "parts/notes.txt" not in names and "manifest.json" in names


def test_pack_takes_a_journal_only_up_to_its_last_whole_frame(rec: Path, tmp_path: Path) -> None:
    """A crashed recorder's torn tail, here a sparse 2 GB one, stays out of the pack (it was a 2.1 GB tar)."""
    manifest = (rec / "manifest.json").read_text().replace('"finalized": true', '"finalized": false')
    (rec / "manifest.json").write_text(manifest)
    (rec / "journal").mkdir(mode=0o700, exist_ok=True)
    with (rec / "journal" / "j000009.log").open("wb") as fh:
        fh.truncate(2 << 30)
    assert main(["pack", str(rec), "-o", str(tmp_path / "r.evictlens.tar")]) == 0
    assert (tmp_path / "r.evictlens.tar").stat().st_size < 10 << 20


def test_unpack_of_dev_zero_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["unpack", "/dev/zero", "-o", str(tmp_path / "out")]) == 2
    _one_line(capsys, "/dev/zero", "not a regular file")
    assert not (tmp_path / "out").exists()


def _tar_with(tmp_path: Path, rec: Path, extra: tarfile.TarInfo, data: bytes = b"") -> Path:
    assert main(["pack", str(rec), "-o", str(tmp_path / "good.evictlens.tar")]) == 0
    out = tmp_path / "bad.evictlens.tar"
    with (
        tarfile.open(tmp_path / "good.evictlens.tar") as good,
        tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as bad,
    ):
        for m in good.getmembers():
            bad.addfile(m, good.extractfile(m) if m.isfile() else None)
            if m.name == "manifest.json":
                bad.addfile(extra, io.BytesIO(data))
    return out


def test_unpack_refuses_a_sparse_entry_before_writing_anything(
    rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sparse = tarfile.TarInfo("journal/j000009.log")
    sparse.type = tarfile.GNUTYPE_SPARSE
    sparse.size = 0
    bad = _tar_with(tmp_path, rec, sparse)
    capsys.readouterr()
    assert main(["unpack", str(bad), "-o", str(tmp_path / "out")]) == 2
    _one_line(capsys, "sparse")
    assert not (tmp_path / "out").exists()


def test_unpack_refuses_a_file_that_is_not_a_recordings(
    rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = tarfile.TarInfo("parts/evil.sh")
    info.size = 4
    bad = _tar_with(tmp_path, rec, info, b"boom")
    capsys.readouterr()
    assert main(["unpack", str(bad), "-o", str(tmp_path / "out")]) == 2
    _one_line(capsys, "parts/evil.sh", "not a file of a recording")


def test_a_members_name_reaches_the_terminal_escaped(
    rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = tarfile.TarInfo("\x1b[2Jclear")
    info.size = 1
    bad = _tar_with(tmp_path, rec, info, b"x")
    capsys.readouterr()
    assert main(["unpack", str(bad), "-o", str(tmp_path / "out")]) == 2
    err = _one_line(capsys, "\\x1b[2Jclear")
    assert "\x1b" not in err


def test_unpack_of_two_gigabytes_of_zeros_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It fed the file to every decompressor in turn (590 s and counting); a plain tar of zeros has no entry."""
    zeros = tmp_path / "zeros.evictlens.tar"
    with zeros.open("wb") as fh:
        fh.truncate(2 << 30)
    assert main(["unpack", str(zeros), "-o", str(tmp_path / "out")]) == 2
    _one_line(capsys, "no manifest.json inside")


def test_a_pack_the_user_gzipped_still_unpacks(rec: Path, tmp_path: Path) -> None:
    import gzip

    assert main(["pack", str(rec), "-o", str(tmp_path / "r.evictlens.tar")]) == 0
    (tmp_path / "r.evictlens.tar.gz").write_bytes(gzip.compress((tmp_path / "r.evictlens.tar").read_bytes()))
    assert main(["unpack", str(tmp_path / "r.evictlens.tar.gz"), "-o", str(tmp_path / "out")]) == 0
