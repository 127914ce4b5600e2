"""A kubeconfig is read up to a bound and must be UTF-8: ``record --kubeconfig /dev/zero`` or a binary
file is one line naming the file, exit 2, never a read until the kernel kills the recorder or a
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from rec_support import record_options, run_record

from kube.errors import RecordingError
from recordings.recorder.client import KUBECONFIG_MAX_BYTES, load_config
from recordings.recorder.options import RecordOptions


def _opts(kubeconfig: str) -> RecordOptions:
    return record_options(kubeconfig=kubeconfig)


def test_record_with_dev_zero_as_kubeconfig_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    res = run_record(["--kubeconfig", "/dev/zero", "-o", str(out)], timeout=300)
    assert res.returncode == 2, res.stderr
    limit = KUBECONFIG_MAX_BYTES >> 20
    assert res.stderr == f"evictlens record: /dev/zero: kubeconfig larger than {limit} MiB: is it the right file?\n"
    assert not out.exists()


def test_a_kubeconfig_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_bytes(b"apiVersion: v1\nkind: Config\n# caf\xe9\n")
    with pytest.raises(RecordingError, match=r"malformed kubeconfig: not UTF-8 text \(at byte 33\)") as err:
        load_config(_opts(str(kc)))
    assert err.value.source == str(kc)
