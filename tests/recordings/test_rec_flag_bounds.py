"""Issue 28 items 5 and 8: `record` refuses, before touching the disk or the network, an interval under the 1 s
floor (saying why), a kubelet port outside TCP's range and a --kubelet-ca that is missing or not PEM."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kube.errors import RecordingError
from recordings.recorder.options import add_record_arguments, options_from_args


def _parse(monkeypatch: pytest.MonkeyPatch, *argv: str) -> None:
    monkeypatch.delenv("EVICTLENS_MIN_INTERVAL", raising=False)  # the user's floor, not the suite's
    p = argparse.ArgumentParser()
    add_record_arguments(p)
    options_from_args(p.parse_args(["-o", "rec", *argv]))


@pytest.mark.parametrize(
    ("argv", "flag", "said"),
    [
        (["--interval", "1ns"], "--interval", "under 1s: the kubelet refreshes the stats it serves every 10 s"),
        (["--interval", "999ms"], "--interval", "use at least 1s"),
        (["--kubelet-direct", "--kubelet-port", "70000"], "--kubelet-port", "from 1 to 65535"),
        (["--kubelet-direct", "--kubelet-port", "0"], "--kubelet-port", "from 1 to 65535"),
        (["--kubelet-direct", "--kubelet-ca", "/nonexistent/ca.pem"], "--kubelet-ca", "cannot read the CA bundle"),
        (["--kubelet-direct", "--kubelet-ca", "GARBAGE"], "--kubelet-ca", "expected a PEM CA bundle"),
    ],
)
def test_a_record_flag_out_of_bounds_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], flag: str, said: str
) -> None:
    (tmp_path / "garbage.pem").write_bytes(b"\x00\xffnot a certificate")
    argv = [str(tmp_path / "garbage.pem") if a == "GARBAGE" else a for a in argv]
    with pytest.raises(RecordingError) as err:
        _parse(monkeypatch, *argv)
    assert err.value.source == flag and said in err.value.one_line()


def test_one_second_is_the_floor_and_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    _parse(monkeypatch, "--interval", "1s")
