"""Issue 24 item 2, end to end: ``evictlens record`` against the fake API server; a real eviction (the fake kubelet's
own port of the eviction manager under memory pressure) and an OOM kill each become an incident under
``DIR/incidents/`` within one interval + 5 s of being stored, whose pack opens (``unpack``, ``info``, ``replay``,
the TUI), whose report's predicted message is the real one byte for byte, and which a loopback webhook receiver
gets (after a 500 first: retried); a webhook nobody listens on is logged and loses nothing.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from flight_support import DEADLINE, Receiver, evictlens, incidents, report, seconds, start_flight
from rec_support import FakeServer, committed_ticks, kill_quietly, wait_for

from flight.store import PACK, REPORT_TXT

INTERVAL = 1.0
PASSWORD = "hunter2-webhook-secret"


@dataclass(frozen=True)
class Flown:
    out: Path
    stderr: str
    evicted: dict[str, Any]
    killed: dict[str, Any]
    receiver: Receiver


@pytest.fixture(scope="module")
def flown(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flown]:
    server = FakeServer(
        tmp_path_factory.mktemp("apiserver"),
        nodes=2,
        pods=3,
        kubelet_ports=False,
        extra=["--pressure", "--sample-period", f"{INTERVAL:g}"],
    )
    receiver = Receiver(fail_first=1)
    url = receiver.start().replace("http://", f"http://flight:{PASSWORD}@")
    server.start()
    out = tmp_path_factory.mktemp("flight") / "rec"
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
                f"{INTERVAL:g}s",
                "--timeout",
                "2s",
                "--incident-window",
                "30s,3s",
                "--webhook",
                url,
            ]
        )
        try:
            wait_for(lambda: committed_ticks(out) >= 2, DEADLINE, "two ticks before the pressure")
            server.control("pressure", {"nodes": {"node-000": {"delta": 0.5}}})
            wait_for(lambda: bool(incidents(out, "evicted")), DEADLINE, "the eviction's incident")
            killed = server.control("oom_kill", {"node": "node-001", "pod": 1})
            wait_for(lambda: bool(incidents(out, "oomkilled")), DEADLINE, "the OOM kill's incident")
            wait_for(
                lambda: all(report(p)["window"]["complete"] for p in incidents(out, "evicted")),
                DEADLINE,
                "the eviction's after-window re-packed",
            )
            wait_for(lambda: len(receiver.delivered()) >= 2, DEADLINE, "both reports delivered to the webhook")
            proc.send_signal(signal.SIGTERM)
            _stdout, err = proc.communicate(timeout=DEADLINE)
        finally:
            kill_quietly(proc)
        assert proc.returncode == 0, err
        (evicted,) = server.control("pressure")["evictions"]
    finally:
        server.stop()
        receiver.stop()
    yield Flown(out, err, evicted, killed, receiver)


def test_the_eviction_is_an_incident_within_one_interval_and_5s_with_the_exact_message(flown: Flown) -> None:
    (path,) = incidents(flown.out, "evicted")
    doc = report(path)
    inc = doc["incident"]
    assert (inc["node"], inc["pod"], inc["uid"]) == ("node-000", flown.evicted["pod"], flown.evicted["uid"])
    first = doc.get("first_published") or doc["generated"]
    assert seconds(first) - seconds(inc["stored"]) <= INTERVAL + 5, (first, inc["stored"])
    assert doc["real_message"] == flown.evicted["message"]
    assert doc["predicted"]["message"] == flown.evicted["message"]  # byte for byte
    assert doc["same_message"] is True and doc["message_diff"] is None
    assert doc["ranking"][0]["pod"].endswith(flown.evicted["pod"]) and doc["ranking"][0]["decided_by"] == "evicted"
    assert doc["settings"]["thresholds"] and doc["settings"]["sources"]
    assert doc["explanation"]["result"]["evictions"][0]["message"] == flown.evicted["message"]
    change = doc["smallest_change"]
    assert change["setting"].startswith("--eviction-hard 'memory.available<") and change["engine_check"]
    assert doc["window"]["complete"] is True
    text = (path / REPORT_TXT).read_text()
    assert "same byte for byte" in text and repr(flown.evicted["message"]) in text
    line = f"incident Evicted {flown.evicted['namespace']}/{flown.evicted['pod']} on node-000"
    assert sum(line in entry for entry in flown.stderr.splitlines()) == 1, flown.stderr


def test_the_oom_kill_is_an_incident_with_the_kernel_side(flown: Flown) -> None:
    (path,) = incidents(flown.out, "oomkilled")
    doc = report(path)
    inc = doc["incident"]
    k = flown.killed
    assert (inc["node"], inc["pod"], inc["container"]) == ("node-001", k["pod"], k["container"])
    first = doc.get("first_published") or doc["generated"]
    assert seconds(first) - seconds(inc["stored"]) <= INTERVAL + 5
    kernel = doc["kernel"]
    assert isinstance(kernel["oom_score_adj"], int) and kernel["qos"]
    assert kernel["passes_before"] and kernel["cause"]
    assert kernel["memory_ran_out_between_passes"] == []  # the fake's node keeps plenty of memory
    assert kernel["cause"].startswith("not determined")  # plenty of memory at every pass
    assert doc["smallest_change"]["setting"] is None and "not proposed" in doc["smallest_change"]["derived"]
    assert f"incident OOMKilled {k['namespace']}/{k['pod']} container {k['container']} on node-001" in flown.stderr


def test_the_pack_opens_in_info_replay_and_explain(flown: Flown, tmp_path: Path) -> None:
    (path,) = incidents(flown.out, "evicted")
    rec = tmp_path / "window"
    res = evictlens("unpack", str(path / PACK), "-o", str(rec))
    assert res.returncode == 0, res.stderr
    info = evictlens("info", str(rec), "--json")
    assert info.returncode == 0, info.stderr
    assert orjson.loads(info.stdout)["manifest"]["kubelet_versions"].keys() == {"node-000"}
    replayed = evictlens("replay", str(rec), "--json", "--jobs", "1")
    assert replayed.returncode == 0, replayed.stderr
    (predicted,) = orjson.loads(replayed.stdout)["evictions"]
    assert predicted["message"] == flown.evicted["message"]
    tick = report(path)["predicted"]["tick"]
    explained = evictlens("explain", str(rec), "--node", "node-000", "--tick", str(tick), "--json")
    assert explained.returncode == 0, explained.stderr
    assert orjson.loads(explained.stdout)["result"]["evictions"][0]["message"] == flown.evicted["message"]


@pytest.mark.anyio
async def test_the_pack_loads_in_the_tui(flown: Flown, tmp_path: Path) -> None:
    from pilot_wait import overview_ready, until

    from tui.app import make_app

    (path,) = incidents(flown.out, "evicted")
    app = make_app(path / PACK, cache=tmp_path / "cache", export_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview of the incident's pack")
        assert [e.pod for e in app.view.result.evictions] == [flown.evicted["pod"]]


def test_the_webhook_got_each_report_after_a_500_and_no_secret_anywhere(flown: Flown) -> None:
    statuses = [status for status, _h, _b in flown.receiver.got]
    assert statuses[0] == 500 and statuses.count(200) == 2, statuses  # retried, then each report once
    kinds = sorted(d["incident"]["kind"] for d in flown.receiver.delivered())
    assert kinds == ["Evicted", "OOMKilled"]
    auth = [h.get("Authorization") for _s, h, _b in flown.receiver.got]
    assert all(a and a.startswith("Basic ") for a in auth)  # the URL's credentials, as a header
    assert PASSWORD not in flown.stderr
    for _s, _h, body in flown.receiver.got:
        assert PASSWORD.encode() not in body
    for f in (flown.out / "incidents").rglob("*"):
        assert not f.is_file() or PASSWORD.encode() not in f.read_bytes()
        assert f.stat().st_mode & 0o077 == 0, f  # 0600 files, 0700 directories


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_packing_the_recording_leaves_the_incidents_out(flown: Flown, tmp_path: Path) -> None:
    import tarfile

    res = evictlens("pack", str(flown.out), "-o", str(tmp_path / "rec.evictlens.tar"))
    assert res.returncode == 0, res.stderr
    with tarfile.open(tmp_path / "rec.evictlens.tar") as tar:
        names = tar.getnames()
    assert "manifest.json" in names and not [n for n in names if n.startswith("incidents")]
