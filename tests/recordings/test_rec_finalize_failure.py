"""Issue 28 item 10: a recorder that cannot finalize (disk full at the final fold) gives its writer lock up, so
`record --append` or `info` can follow."""

from __future__ import annotations

from pathlib import Path

import pytest
from rec_support import record_options

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.format import Manifest
from recordings.recorder.main import Recorder
from recordings.writer import RecordingWriter


def test_a_finalize_that_fails_releases_the_writer_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    recorder = Recorder(record_options(output=str(out)))
    recorder.writer = RecordingWriter(out, Manifest(source="recorder"))
    recorder.writer.commit(recorder.writer.begin_tick())
    assert (out / fmt.LOCK).exists()

    def full(**_kw: object) -> None:
        raise RecordingError("disk full while writing a Parquet part (No space left on device)", source=str(out))

    monkeypatch.setattr(recorder.writer, "finalize", full)
    code, outcome = recorder._finish(0, "finished", disk_failed=False)
    assert (code, outcome) == (1, "stopped")
    assert "could not finalize" in capsys.readouterr().err
    assert not (out / fmt.LOCK).exists()
