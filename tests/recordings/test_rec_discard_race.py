"""A recorder that stops before its first tick removes only what its own writer created.

The clean-up used to act on a look at the output directory taken before the writer took its
lock.  Another ``record`` could create, or finish, a recording in that directory in between;
the late one was then refused (or stopped before its first tick) and its clean-up removed the
other's whole recording.  These tests put the other writer exactly in that window, by running
it from inside the recorder's call to the writer, so the interleaving happens every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
import yaml
from apiserver.cluster import SyntheticCluster
from rec_support import record_options, summary_files

import recordings.recorder.main as recorder_main
from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.recorder.main import Recorder
from recordings.recorder.options import RecordOptions
from recordings.writer import RecordingWriter

SERVER = "https://cluster.test"
T0 = 1_716_200_122_000_000


def _opts(tmp_path: Path, **kw: Any) -> RecordOptions:
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "main",
        "clusters": [{"name": "c", "cluster": {"server": SERVER}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kc))
    return record_options(
        **({"output": str(tmp_path / "rec"), "kubeconfig": str(tmp_path / "kubeconfig"), "interval": 0.2} | kw)
    )


def _cluster() -> httpx2.MockTransport:
    """The version and the node list; the recorder under test never gets as far as a poll."""
    cluster = SyntheticCluster(2, 2)

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/version":
            body: Any = {"gitVersion": "v1.33.0-mock"}
        elif request.url.path == "/api/v1/nodes" and not request.url.params.get("watch"):
            items = [cluster.node_object(n, 1) for n in cluster.names]
            body = {"kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": items}
        else:
            return httpx2.Response(404, content=b"{}")
        return httpx2.Response(200, content=orjson.dumps(body))

    return httpx2.MockTransport(handle)


def _other_record(root: Path, ticks: int) -> None:
    """Another writer that creates a recording at ``root``, writes ``ticks`` ticks and finishes."""
    summary = orjson.loads(summary_files()[0].read_bytes())
    w = RecordingWriter(root, Manifest(source="test"))
    for i in range(ticks):
        t = w.begin_tick(T0 + i * 10_000_000)
        t.add_summary("node-a", summary, scraped=t.time)
        w.commit(t)
    w.finalize()


def _run(opts: RecordOptions, monkeypatch: pytest.MonkeyPatch, *, stop_after_start: bool) -> int:
    """Run the recorder with the other writer slipped in just before its own writer starts."""
    recorder = Recorder(opts, _cluster())

    def writer_after_another(
        root: Path, manifest: Manifest, *, append: bool = False, retain: float | None = None
    ) -> RecordingWriter:
        _other_record(root, ticks=3)
        writer = RecordingWriter(root, manifest, append=append, retain=retain)
        if stop_after_start:
            recorder.stop.set()  # SIGTERM/SIGHUP before the first tick
        return writer

    monkeypatch.setattr(recorder_main, "RecordingWriter", writer_after_another)
    return asyncio.run(recorder.run())


def test_a_record_refused_because_another_finished_meanwhile_leaves_that_recording_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = _opts(tmp_path)
    assert not Path(opts.output).exists()
    assert _run(opts, monkeypatch, stop_after_start=False) == 2
    assert "already holds a recording" in capsys.readouterr().err
    rec = open_recording(Path(opts.output))
    assert rec.manifest.finalized and [t.index for t in rec.ticks()] == [0, 1, 2]


def test_an_append_stopped_before_its_first_tick_removes_only_its_own_journal_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opts = _opts(tmp_path, append=True)
    assert _run(opts, monkeypatch, stop_after_start=True) == 0
    assert "stopped before the first tick; nothing was recorded" in capsys.readouterr().err
    root = Path(opts.output)
    rec = open_recording(root)
    assert rec.manifest.finalized and [t.index for t in rec.ticks()] == [0, 1, 2]
    assert not (root / "writer.lock").exists(), "the lock went with the stopped recorder"
    assert all(seg.stat().st_size > 0 for seg in (root / "journal").iterdir()), "an empty segment was left"


def test_a_new_record_stopped_before_its_first_tick_leaves_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ordinary case still holds: what the writer created is gone, so a retry can start."""
    opts = _opts(tmp_path)
    recorder = Recorder(opts, _cluster())
    real = RecordingWriter

    def stopped(
        root: Path, manifest: Manifest, *, append: bool = False, retain: float | None = None
    ) -> RecordingWriter:
        writer = real(root, manifest, append=append, retain=retain)
        recorder.stop.set()
        return writer

    monkeypatch.setattr(recorder_main, "RecordingWriter", stopped)
    assert asyncio.run(recorder.run()) == 0
    assert not Path(opts.output).exists()
