"""pack never follows a link (a linked parts/ used to give a pack holding only the manifest, rc 0,
with the link target visible in the tar); unpack never writes through one, and what it creates
is 0700/0600 whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import tarfile
from pathlib import Path

import orjson
from rec_support import run_cli, summary_files

from recordings import format as fmt
from recordings.pack import pack, unpack
from recordings.reader import open_recording
from recordings.writer import RecordingWriter

T0 = 1_716_200_122_000_000


def _recording(root: Path) -> None:
    summary = orjson.loads(summary_files()[0].read_bytes())
    w = RecordingWriter(root, fmt.Manifest(source="test"))
    for i in range(2):
        t = w.begin_tick(T0 + i * 10_000_000)
        t.add_summary("node-a", summary, scraped=t.time)
        w.commit(t)
        w.fold()
    w.finalize()


def _one_line(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and "internal error" not in res.stderr, res.stderr
    return res.stderr


def test_a_symlinked_parts_dir_is_refused_naming_the_link_not_its_target(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _recording(root)
    elsewhere = tmp_path / "secret-place" / "parts"
    elsewhere.parent.mkdir()
    (root / "parts").rename(elsewhere)
    (root / "parts").symlink_to(elsewhere)
    assert open_recording(root).count_rows()["ticks"] == 2  # it reads through the link...
    dest = tmp_path / "r.evictlens.tar"
    err = _one_line(run_cli("pack", str(root), "-o", str(dest)))  # ...but is not packed through it
    assert "holds a symbolic link (parts); pack stores only the recording's own files" in err
    assert "secret-place" not in err and not dest.exists()


def test_a_symlinked_file_inside_a_part_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _recording(root)
    part = fmt.list_parts(root)[0][2]
    outside = tmp_path / "outside.parquet"
    (part / "ticks.parquet").rename(outside)
    (part / "ticks.parquet").symlink_to(outside)
    err = _one_line(run_cli("pack", str(root), "-o", str(tmp_path / "r.tar")))
    assert f"holds a symbolic link (parts/{part.name}/ticks.parquet)" in err and str(outside) not in err


def test_the_pack_holds_only_regular_files_never_the_lock_or_work_files(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _recording(root)
    (root / fmt.LOCK).write_text("12345\n")  # left by a writer that was killed
    (root / "parts" / "p000009-000009.tmp").mkdir()
    (root / "parts" / "p000009-000009.tmp" / "ticks.parquet").write_bytes(b"half")
    dest = tmp_path / "r.evictlens.tar"
    pack(root, dest)
    with tarfile.open(dest) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names[0] == "manifest.json" and names[-1] == "pack-index.json"
    assert all(m.isfile() and m.mode == 0o600 for m in members)
    assert not any(fmt.LOCK in n or ".tmp" in n for n in names)
    assert sum(n.endswith(".parquet") for n in names) == sum(1 for _ in root.glob("parts/p*-*[0-9]/*.parquet"))


def test_unpack_onto_a_symlink_is_one_line_and_writes_nothing_through_it(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _recording(root)
    dest = tmp_path / "r.evictlens.tar"
    pack(root, dest)
    target = tmp_path / "target"
    target.mkdir()
    for link, points_to in (("to-empty-dir", target), ("dangling", tmp_path / "missing")):
        (tmp_path / link).symlink_to(points_to)
        err = _one_line(run_cli("unpack", str(dest), "-o", str(tmp_path / link)))
        assert f"{tmp_path / link}: is a symbolic link; give a new directory" in err
        assert (tmp_path / link).is_symlink()
    assert not list(target.iterdir()) and not (tmp_path / "missing").exists()


def test_unpack_creates_every_directory_0700_and_file_0600_whatever_the_umask(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _recording(root)
    dest = tmp_path / "r.evictlens.tar"
    pack(root, dest)
    old = os.umask(0)
    try:
        unpack(dest, tmp_path / "out")
    finally:
        os.umask(old)
    out = tmp_path / "out"
    for path in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {mode:o}"
    assert (out / "parts").is_dir() and open_recording(out).manifest.finalized
