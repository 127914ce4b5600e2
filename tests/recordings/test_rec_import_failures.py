"""``import`` / ``pack`` / ``unpack`` / ``info`` on bad input: a failed command leaves the disk
as it found it, and what ``info`` reports comes from (and is checked against) the data."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import tarfile
from pathlib import Path

import orjson
import pytest
from rec_support import REPO, child_env, run_cli

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.importer import import_files
from recordings.pack import INDEX
from recordings.writer import RecordingWriter

SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"
DATA = Path(__file__).resolve().parent / "data"


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def _two_node_files(tmp_path: Path) -> list[str]:
    s = orjson.loads((SAMPLE / "summary.json").read_bytes())
    other = dict(s, node=dict(s["node"], nodeName="kind-worker2"))
    (tmp_path / "s2.json").write_bytes(orjson.dumps(other))
    (tmp_path / "configz.json").write_bytes(orjson.dumps({"kubeletconfig": {"kind": "KubeletConfiguration"}}))
    return [str(SAMPLE / "summary.json"), str(tmp_path / "s2.json"), str(tmp_path / "configz.json")]


def _import(tmp_path: Path, out: Path, *extra: str) -> None:
    stamps = ["2024-05-20T10:15:22Z", "2024-05-20T10:15:42Z"]
    res = run_cli(
        "import", *(f"{SAMPLE / 'summary.json'}@{t}" for t in stamps), str(SAMPLE / "pods.json"), "-o", str(out), *extra
    )
    assert res.returncode == 0, res.stderr


def test_import_that_cannot_tell_the_configz_node_creates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    res = run_cli("import", *_two_node_files(tmp_path), "-o", str(out))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert (
        "configz.json: cannot tell which node this /configz belongs to (the summaries are of 2 nodes); "
        "pass --node" in res.stderr
    )
    assert not out.exists()
    res = run_cli("import", *_two_node_files(tmp_path), "-o", str(out), "--node", "kind-worker")
    assert res.returncode == 0, res.stderr  # the retry is not blocked by a half-made recording


def test_failed_append_leaves_the_recording_byte_for_byte_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "rec"
    _import(tmp_path, out)
    before = _snapshot(out)
    res = run_cli("import", *_two_node_files(tmp_path), "-o", str(out), "--append")
    assert res.returncode == 2 and "pass --node" in res.stderr
    assert _snapshot(out) == before  # no empty journal segment left behind

    def fail(self: RecordingWriter, counts: object = None) -> None:
        raise RecordingError("disk full (simulated)", source="test")

    monkeypatch.setattr(RecordingWriter, "finalize", fail)
    s = tmp_path / "late.json"
    s.write_bytes((SAMPLE / "summary.json").read_bytes())
    with pytest.raises(RecordingError, match="simulated"):
        import_files([f"{s}@2024-05-20T10:16:00Z"], out, append=True)  # fails after journalling a tick
    assert _snapshot(out) == before


def test_import_onto_an_existing_file_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("mine")
    res = run_cli("import", str(SAMPLE / "summary.json"), "-o", str(target))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert f"{target}: exists and is not a directory" in res.stderr
    assert target.read_text() == "mine"


def test_import_of_pods_only_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """Exit 2 (bad input): a recording without a tick is one replay rejects as bad input, so making
    one is refused up front; ``--append`` to a recording with ticks is the way to add objects."""
    res = run_cli("import", str(SAMPLE / "pods.json"), "-o", str(tmp_path / "rec"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "no Summary API response among the files (only pods)" in res.stderr and "nothing was written" in res.stderr
    assert not (tmp_path / "rec").exists()
    _import(tmp_path, tmp_path / "rec")
    res = run_cli("import", str(SAMPLE / "node.json"), "-o", str(tmp_path / "rec"), "--append")
    assert res.returncode == 0, res.stderr


def test_info_on_an_import_shows_the_data_time_range_and_base_names(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    _import(tmp_path, out)
    info = json.loads(run_cli("info", str(out), "--json").stdout)
    assert info["time_range"] == {"first_tick": "2024-05-20T10:15:22Z", "last_tick": "2024-05-20T10:15:42Z"}
    m = info["manifest"]
    assert (m["start_time"], m["end_time"]) == ("2024-05-20T10:15:22Z", "2024-05-20T10:15:42Z")
    assert m["options"]["files"] == ["summary.json", "summary.json", "pods.json"]
    text = run_cli("info", str(out)).stdout
    assert "2024-05-20T10:15:22Z .. 2024-05-20T10:15:42Z" in text


def test_info_on_an_old_import_shows_the_data_range_not_the_import_wall_clock(tmp_path: Path) -> None:
    from recordings.pack import unpack

    unpack(DATA / "v1-import.evictlens.tar", tmp_path / "rec")
    assert json.loads((tmp_path / "rec" / "manifest.json").read_text())["start_time"].startswith("2026")
    text = run_cli("info", str(tmp_path / "rec")).stdout
    assert "2024-05-20T10:15:22Z .. 2024-05-20T10:15:42Z" in text


def _leftovers(parent: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name not in keep)


@pytest.mark.parametrize("packed", ["new", "v1"])
def test_unpack_of_a_half_length_pack_fails_and_leaves_nothing(tmp_path: Path, packed: str) -> None:
    src = tmp_path / "full.evictlens.tar"
    if packed == "new":
        _import(tmp_path, tmp_path / "rec")
        assert run_cli("pack", str(tmp_path / "rec"), "-o", str(src)).returncode == 0
    else:
        src.write_bytes((DATA / "v1-import.evictlens.tar").read_bytes())
    for cut in (len(src.read_bytes()) // 2, 512 * 40, 512 * 3):
        half = tmp_path / "half.evictlens.tar"
        half.write_bytes(src.read_bytes()[:cut])
        res = run_cli("unpack", str(half), "-o", str(tmp_path / "out" / "rec"))
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (cut, res.stderr)
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr
        assert f"{half}: " in res.stderr and ("incomplete" in res.stderr or "damaged" in res.stderr), res.stderr
        assert _leftovers(tmp_path, {"rec", "full.evictlens.tar", "half.evictlens.tar"}) == []


def test_unpack_refuses_a_pack_missing_a_member_its_index_lists(tmp_path: Path) -> None:
    _import(tmp_path, tmp_path / "rec")
    assert run_cli("pack", str(tmp_path / "rec"), "-o", str(tmp_path / "a.tar")).returncode == 0
    with tarfile.open(tmp_path / "a.tar") as full, tarfile.open(tmp_path / "b.tar", "w") as cut:
        for m in full.getmembers():
            if not m.name.endswith("pod_stats.parquet"):
                cut.addfile(m, full.extractfile(m))
        assert full.getmembers()[-1].name == INDEX
    res = run_cli("unpack", str(tmp_path / "b.tar"), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and "pod_stats.parquet is listed in pack-index.json but missing" in res.stderr
    assert not (tmp_path / "out").exists()
    res = run_cli("unpack", str(tmp_path / "a.tar"), "-o", str(tmp_path / "out"))
    assert res.returncode == 0 and "complete" in res.stdout, res.stderr


def test_import_shows_progress_on_a_terminal_and_ends_with_a_summary_line(tmp_path: Path) -> None:
    stamps = [f"2024-05-20T10:{m:02d}:00Z" for m in range(20)]
    files = [f"{SAMPLE / 'summary.json'}@{t}" for t in stamps]
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "recordings.cli", "import", *files, "-o", str(tmp_path / "rec")],
        env={**child_env(), "COLUMNS": "100", "TERM": "xterm"},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
    )
    os.close(slave)
    seen = b""
    while True:  # read the terminal until the child closes it (no sleeping: select with a deadline)
        ready, _w, _x = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out, _err = proc.communicate(timeout=60)
    assert proc.returncode == 0, seen
    assert b"writing" in seen and b"20/20" in seen
    assert out.startswith("imported 20 ticks, 1 nodes, 0 objects, 0 evictions from 20 files into")
    assert out.count("\n") == 1


def test_pack_of_a_recording_with_a_truncated_part_names_the_file(tmp_path: Path) -> None:
    _import(tmp_path, tmp_path / "rec")
    part = fmt.list_parts(tmp_path / "rec")[0][2]
    f = part / "node_stats.parquet"
    f.write_bytes(f.read_bytes()[:50])
    res = run_cli("pack", str(tmp_path / "rec"), "-o", str(tmp_path / "bug.tar"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and f"{f}: truncated" in res.stderr
    assert not (tmp_path / "bug.tar").exists()
