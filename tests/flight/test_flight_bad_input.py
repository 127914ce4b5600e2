"""The flight recorder's bad input and failures: a malformed ``--incident-window``/``--webhook``/cap is one line and
exit 2 before anything touches the disk; a webhook nobody listens on is logged (without its credentials) and
counted, and loses nothing: the incident is on disk and the recording finishes with exit 0. Retention drops the
oldest incidents first, each said in the log."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest
from flight_support import DEADLINE, evictlens, incidents, report, start_flight
from rec_support import FakeServer, StderrLines, kill_quietly, wait_for

from flight.store import REPORT_JSON, IncidentStore
from kube.errors import RecordingError
from recordings.reader import open_recording


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--incident-window", "30m"], "--incident-window: expected BEFORE,AFTER as two Go durations"),
        (["--incident-window", "30x,5m"], '--incident-window: time: unknown unit "x"'),
        (["--incident-window", "5s,1m", "--interval", "10s"], "must be at least one --interval"),
        (["--webhook", "ftp://hooks.example/x"], "--webhook: expected an http:// or https:// URL"),
        (["--max-incidents", "0"], "--max-incidents: expected a positive number"),
        (["--max-incidents-size", "lots"], "--max-incidents-size: expected a size such as 1Gi"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2_before_touching_the_disk(
    flags: list[str], expected: str, tmp_path: Path
) -> None:
    out = tmp_path / "rec"
    res = evictlens("record", "-o", str(out), *flags)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], res.stderr
    assert "Traceback" not in res.stderr and not out.exists()


def test_an_unreachable_webhook_is_logged_and_loses_nothing(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = "pa55-in-the-url"
    server = FakeServer(tmp_path / "apiserver", nodes=1, pods=2, kubelet_ports=False)
    (tmp_path / "apiserver").mkdir()
    server.start()
    out = tmp_path / "rec"
    try:
        proc = start_flight(
            [
                "--kubeconfig",
                server.kubeconfig,
                "--context",
                "static",
                "-o",
                str(out),
                "--interval",
                "1s",
                "--timeout",
                "2s",
                "--incident-window",
                "10s,0s",
                "--webhook",
                f"http://u:{secret}@127.0.0.1:{port}/hook?token={secret}",
                "--listen",
                "127.0.0.1:0",
                "--retain",
                "3s",
            ]
        )
        err = StderrLines(proc)
        try:
            wait_for(lambda: _ticks(out) >= 2, DEADLINE, "two ticks")
            server.control("oom_kill", {"node": "node-000", "pod": 0})
            server.control("system_oom", {"node": "node-000", "victim": "java", "pid": 4242})
            wait_for(lambda: bool(incidents(out, "oomkilled")), DEADLINE, "the OOM kill's incident")
            wait_for(lambda: bool(incidents(out, "systemoom")), DEADLINE, "the SystemOOM's incident")
            wait_for(
                lambda: sum("not delivered after 5 attempts" in x for x in err.lines) == 2,
                DEADLINE,
                "both failures said",
            )
            metrics = _scrape(err.lines)
            stored = max(
                report(p)["incident"]["stored_us"] for p in incidents(out, "oomkilled") + incidents(out, "systemoom")
            )
            wait_for(lambda: _first_tick_us(out) > stored + 1_000_000, DEADLINE, "--retain to drop the kills' ticks")
            proc.send_signal(signal.SIGTERM)
            proc.wait(DEADLINE)
        finally:
            kill_quietly(proc)
        text = err.text()
    finally:
        server.stop()
    assert proc.returncode == 0, text
    assert secret not in text
    assert f"webhook http://127.0.0.1:{port}/hook cannot be reached now" in text
    assert sum("not delivered" in line for line in text.splitlines()) == 2, text  # one per incident
    (system,) = incidents(out, "systemoom")
    doc = report(system)
    assert doc["kernel"]["victim"] == "java" and doc["kernel"]["pid"] == 4242
    assert doc["kernel"]["cause"].startswith("node: the kernel's global OOM killer")
    assert system.name.endswith("-node-000-systemoom-java")
    (path,) = incidents(out, "oomkilled")
    assert report(path)["window"]["complete"] is True  # no after-window: complete at once
    assert 'evictlens_recorder_incidents_total{kind="oom_killed"} 1.0' in metrics
    assert 'evictlens_recorder_incidents_total{kind="system_oom"} 1.0' in metrics
    assert "evictlens_recorder_webhook_failures_total 2.0" in metrics
    assert "evictlens_recorder_incident_failures_total 0.0" in metrics
    (stamp,) = [line for line in metrics.splitlines() if line.startswith("evictlens_recorder_last_incident_timestamp")]
    assert float(stamp.split()[-1]) > 0
    info = evictlens("info", str(out))
    assert info.returncode == 0 and "finalized" in info.stdout, info.stderr
    # the incident outlives the rolling window: its pack still holds the kill's ticks
    unpacked = tmp_path / "window"
    assert evictlens("unpack", str(path / "window.evictlens.tar"), "-o", str(unpacked)).returncode == 0
    first, last = open_recording(unpacked).time_range()
    killed = report(path)["incident"]["time_us"]
    # no after-window: the window ends with the tick that stored the kill (its time has whole seconds only)
    assert first is not None and last is not None and first <= killed and last >= killed - 1_000_000
    assert open_recording(out).time_range()[0] > last  # gone from the recording itself


def _ticks(out: Path) -> int:
    try:
        return int(open_recording(out).scan_ticks().select("tick").unique().collect().height)
    except (RecordingError, OSError):
        return 0


def _first_tick_us(out: Path) -> int:
    try:
        first, _last = open_recording(out).time_range()
    except (RecordingError, OSError):
        return 0
    return first or 0


def _scrape(lines: list[str]) -> str:
    """GET /metrics from the address the recorder said it listens on."""
    import urllib.request

    (said,) = [line for line in lines if "/metrics, /healthz, /readyz on" in line]
    address = said.split(" on ", 1)[1].strip()
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as resp:
        return str(resp.read().decode())


def test_retention_drops_the_oldest_incidents_first_and_says_so(tmp_path: Path) -> None:
    said: list[str] = []
    store = IncidentStore(tmp_path, max_incidents=2, max_bytes=10_000, log=said.append)
    store.ensure()
    made = []
    for i, size in enumerate((100, 100, 100, 6_000, 6_000)):
        doc = {"incident": {"key": str(i)}, "window": {"complete": True}, "pad": "x" * size}
        made.append(store.publish(f"2026010{i}T000000Z-node-evicted-pod{i}", doc, "text\n", None))
    store.enforce(newest=made[4])
    assert [p.name for p in store.published()] == [made[4].name]  # by count, then by the size cap
    assert len(said) == 4 and all("dropped: the oldest" in line for line in said), said
    assert all("--max-incidents 2" in line for line in said[:3]) and "--max-incidents-size 10000" in said[3]
    assert [line.split()[1] for line in said] == [m.name for m in made[:4]]
    store = IncidentStore(tmp_path, max_incidents=5, max_bytes=1_000, log=said.append)
    store.enforce(newest=made[4])
    assert [p.name for p in store.published()] == [made[4].name]  # alone over the cap: the newest is kept
    assert "is never dropped" in said[-1] and (made[4] / REPORT_JSON).is_file()
