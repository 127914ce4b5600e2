"""Bad input to the recordings commands is one line and exit 2; a cluster that cannot be reached is exit 1.

A scenario starting at 9999-12-31T23:59:59Z ended in OverflowError, a manifest whose
``kubelet_versions`` is a list in AttributeError from ``info``, and an unreachable API server
exited 2 as if the command line were wrong.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from rec_support import run_cli, run_evictlens, run_record, summary_files

from kube.errors import EXIT_STATUS_HELP

BUNDLED = Path(__file__).resolve().parents[2] / "recordings" / "scenarios" / "bundled" / "overcommit.yaml"


def _one_line(stderr: str) -> str:
    assert stderr.count("\n") == 1 and "internal error" not in stderr and "Traceback" not in stderr, stderr
    return stderr.strip()


@pytest.mark.parametrize("start", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"], ids=["year-9999", "year-1"])
def test_a_scenario_past_the_times_a_recording_holds_is_one_line(tmp_path: Path, start: str) -> None:
    lines = [line for line in BUNDLED.read_text().splitlines() if not line.startswith("start:")]
    scenario = tmp_path / "late.yaml"
    scenario.write_text("\n".join([f"start: {start}", *lines]) + "\n")
    res = run_evictlens("scenario", str(scenario), "-o", str(tmp_path / "rec"))
    assert res.returncode == 2, res.stderr
    line = _one_line(res.stderr)
    assert line.startswith(f"evictlens scenario: {scenario}: line 1: start: a scenario from ")
    assert "leaves the times a recording can hold" in line
    assert not (tmp_path / "rec").exists() or not any((tmp_path / "rec").iterdir())


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    out = tmp_path / "rec"
    res = run_cli("import", str(summary_files()[0]), "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("kubelet_versions", ["node-a", "v1.30.0"], "expected a map of node name to kubelet version, got a list"),
        ("kubelet_versions", {"node-a": 130}, "expected a map of node name to kubelet version, got a map with other"),
        ("counts", [], "expected a map of name to count, got a list"),
        ("options", "fast", "expected a map of recorder options, got str"),
        ("finalized", "yes", "expected true or false, got str"),
    ],
)
def test_info_names_a_manifest_field_of_the_wrong_type(
    imported: Path, field: str, value: object, expected: str
) -> None:
    manifest = imported / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc[field] = value
    manifest.write_text(json.dumps(doc))
    res = run_cli("info", str(imported))
    assert res.returncode == 2, res.stderr
    assert _one_line(res.stderr).startswith(f"evictlens info: {manifest}: {field}: {expected}")


def test_help_gives_every_exit_status_including_credentials() -> None:
    res = run_cli("--help")
    assert " ".join(EXIT_STATUS_HELP.split()) in " ".join(res.stdout.split())
    record = " ".join(run_cli("record", "--help").stdout.split())
    assert "3 the cluster refused the credentials" in record and "SIGHUP" in record


def test_an_api_server_that_cannot_be_reached_is_exit_1_not_bad_input(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    res = run_record(["--kubeconfig", str(kc), "-o", str(tmp_path / "rec"), "--interval", "1s", "--duration", "1s"])
    assert res.returncode == 1, res.stderr
    line = _one_line(res.stderr)
    assert "cannot reach the API server: ConnectError" in line and not (tmp_path / "rec").exists()
