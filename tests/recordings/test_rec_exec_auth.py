"""Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1) against the real fake
API server, with the real test plugin (apiserver/exec_plugin.py) run as a subprocess.

Most tests drive :class:`KubeClient` in-process (a request takes milliseconds); a few run the
whole ``evictlens record`` process where stdin, exit codes and the disk matter.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rec_support import FakeServer, plugin_runs, record_options, run_record, start_record, write_kubeconfig

from kube.errors import RecordingError
from recordings.reader import open_recording
from recordings.recorder.client import AuthFailure, KubeClient
from recordings.recorder.exec_auth import CredentialError
from recordings.recorder.options import RecordOptions

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"
EXTENSION = {"audience": "evictlens-test", "nested": {"n": 1}}


def _opts(kubeconfig: Path, **kw: Any) -> RecordOptions:
    # timeout: each request to the fake server on a loaded box; none of these tests waits it out
    return record_options(
        **({"output": "unused", "kubeconfig": str(kubeconfig), "concurrency": 4, "timeout": 60.0} | kw)
    )


def _v1(tmp_path: Path, server: FakeServer, **exec_changes: Any) -> tuple[Path, Path]:
    """A v1 exec user with provideClusterInfo and a cluster extension; returns (kubeconfig, log)."""
    log = tmp_path / "plugin.log"
    changes: dict[str, Any] = {"apiVersion": V1, "interactiveMode": "Never", "provideClusterInfo": True}
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        exec_changes=changes | exec_changes,
        plugin_env={"EVL_PLUGIN_LOG": str(log), "EVL_PLUGIN_API_VERSION": exec_changes.get("apiVersion", V1)},
        cluster_changes={"extensions": [{"name": "client.authentication.k8s.io/exec", "extension": EXTENSION}]},
    )
    return kc, log


async def _versions(client: KubeClient, n: int = 1) -> list[Any]:
    try:
        return [await client.get_json("/version") for _ in range(n)]
    finally:
        await client.close()


def test_v1_plugin_gets_exec_info_with_cluster_info_and_its_token_is_accepted(
    server: FakeServer, tmp_path: Path
) -> None:
    kc, log = _v1(tmp_path, server)
    before = server.stats().get("auth_401", 0)
    (body,) = asyncio.run(_versions(KubeClient.build(_opts(kc))))
    assert body["gitVersion"] == "v1.28.3-fake"
    assert server.stats().get("auth_401", 0) == before, "the first token was accepted"
    (run,) = plugin_runs(log)
    info = run["exec_info"]
    assert info["apiVersion"] == V1 and info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False and run["stdin_tty"] is False
    cluster = info["spec"]["cluster"]
    assert cluster["server"] == server.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == Path(server.ready["ca"]).read_bytes()
    assert cluster["config"] == EXTENSION


def test_v1beta1_plugin_gets_exec_info_without_cluster_info(server: FakeServer, tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    kc = write_kubeconfig(server, tmp_path / "kubeconfig", plugin_env={"EVL_PLUGIN_LOG": str(log)})
    asyncio.run(_versions(KubeClient.build(_opts(kc)), 2))
    (run,) = plugin_runs(log)  # the token is cached: one run for both requests
    assert run["exec_info"]["apiVersion"] == V1BETA1
    assert "cluster" not in run["exec_info"]["spec"]


def test_expiration_timestamp_reruns_the_plugin_before_the_server_refuses_the_token(
    server: FakeServer, tmp_path: Path
) -> None:
    """A clock moved past ``expirationTimestamp``: the plugin runs again before the request,
    so the server never sees the expired token (no 401)."""
    log = tmp_path / "plugin.log"
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        exec_changes={"apiVersion": V1, "interactiveMode": "Never"},
        plugin_env={"EVL_PLUGIN_LOG": str(log), "EVL_PLUGIN_API_VERSION": V1, "EVL_PLUGIN_EXPIRES_IN": "3600"},
    )
    client = KubeClient.build(_opts(kc))
    assert client.auth is not None
    clock = [dt.datetime.now(dt.UTC)]
    client.auth._now = lambda: clock[0]
    before = server.stats().get("auth_401", 0)

    async def scenario() -> None:
        try:
            await client.get_json("/version")
            await client.get_json("/version")
            assert len(plugin_runs(log)) == 1, "a valid token is reused"
            clock[0] += dt.timedelta(hours=2)
            await client.get_json("/version")
        finally:
            await client.close()

    asyncio.run(scenario())
    assert len(plugin_runs(log)) == 2
    assert server.stats().get("auth_401", 0) == before


def test_a_token_the_server_keeps_rejecting_reruns_the_plugin_once_then_says_credential(
    server: FakeServer, tmp_path: Path
) -> None:
    server.faults(token_ttl=0.0)  # every minted token is refused
    kc, log = _v1(tmp_path, server)
    with pytest.raises(AuthFailure) as err:
        asyncio.run(_versions(KubeClient.build(_opts(kc))))
    text = err.value.one_line()
    assert "unauthorized (401) for GET /version" in text and "rejected the credential" in text
    assert "ClusterRole" not in text and "RBAC" not in text
    assert len(plugin_runs(log)) == 2


def test_v1_without_interactive_mode_is_refused_naming_the_field(server: FakeServer, tmp_path: Path) -> None:
    kc, _log = _v1(tmp_path, server, interactiveMode=None)
    with pytest.raises(RecordingError, match="interactiveMode must be specified"):
        KubeClient.build(_opts(kc))


def test_unsupported_api_version_is_refused_in_one_line(server: FakeServer, tmp_path: Path) -> None:
    kc, _log = _v1(tmp_path, server, apiVersion="client.authentication.k8s.io/v1alpha1")
    with pytest.raises(RecordingError, match="v1alpha1' is not supported; expected one of"):
        KubeClient.build(_opts(kc))


def test_plugin_answering_with_another_api_version_is_refused(server: FakeServer, tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        exec_changes={"apiVersion": V1, "interactiveMode": "Never"},
        plugin_env={"EVL_PLUGIN_LOG": str(log), "EVL_PLUGIN_API_VERSION": V1BETA1},
    )
    with pytest.raises(CredentialError, match=f"is configured for {V1} but returned apiVersion"):
        asyncio.run(_versions(KubeClient.build(_opts(kc))))


def test_failing_plugin_stops_the_recorder_in_one_line_with_its_stderr(server: FakeServer, tmp_path: Path) -> None:
    log = tmp_path / "plugin.log"
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        plugin_env={"EVL_PLUGIN_LOG": str(log), "EVL_PLUGIN_FAIL": "error: please run 'cloud auth login'"},
    )
    out = tmp_path / "rec"
    res = run_record(["--kubeconfig", str(kc), "-o", str(out), "--duration", "1s"], stdin=subprocess.DEVNULL)
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "exited with status 1: error: please run 'cloud auth login'" in line and "Traceback" not in line
    assert not out.exists()


def test_interactive_mode_always_without_a_terminal_is_refused(server: FakeServer, tmp_path: Path) -> None:
    kc, log = _v1(tmp_path, server, interactiveMode="Always")
    out = tmp_path / "rec"
    res = run_record(["--kubeconfig", str(kc), "-o", str(out), "--duration", "1s"], stdin=subprocess.DEVNULL)
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "cannot support interactive mode: standard input is not a terminal" in line
    assert plugin_runs(log) == [] and not out.exists()


@pytest.mark.parametrize(("mode", "interactive"), [("IfAvailable", True), ("Always", True), ("Never", False)])
def test_interactive_mode_with_a_terminal_on_stdin(
    server: FakeServer, tmp_path: Path, mode: str, interactive: bool
) -> None:
    """Run from a terminal (a pty on stdin): IfAvailable/Always hand it to the plugin and say
    ``interactive: true``; Never gives the plugin no stdin."""
    kc, log = _v1(tmp_path, server, interactiveMode=mode)
    out = tmp_path / "rec"
    leader, follower = pty.openpty()
    try:
        proc = start_record(["--kubeconfig", str(kc), "-o", str(out), "--duration", "1s"], stdin=follower)
        _o, err = proc.communicate(timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 0, err
    run = plugin_runs(log)[0]
    assert run["exec_info"]["spec"]["interactive"] is interactive
    assert run["stdin_tty"] is interactive
    assert open_recording(out).manifest.finalized


def test_records_with_a_v1_exec_plugin_end_to_end(server: FakeServer, tmp_path: Path) -> None:
    kc, log = _v1(tmp_path, server)
    out = tmp_path / "rec"
    res = run_record(["--kubeconfig", str(kc), "-o", str(out), "--interval", "1s", "--duration", "1.5s"])
    assert res.returncode == 0, res.stderr
    rec = open_recording(out)
    assert rec.nodes() == ["node-000", "node-001", "node-002"] and all(t.ok for t in rec.ticks())
    assert len(plugin_runs(log)) == 1, "one token for the version check, lists, watches and every poll"


def test_a_plugin_writing_without_end_is_stopped_at_the_output_bound_in_one_line(
    server: FakeServer, tmp_path: Path
) -> None:
    """Issue 19 §7: a credential plugin's output is read up to 1 MiB, never until memory runs out."""
    endless = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        exec_changes={"apiVersion": V1, "interactiveMode": "Never", "command": sys.executable, "args": ["-c", endless]},
    )
    with pytest.raises(CredentialError, match=r"wrote more than 1 MiB \(an ExecCredential is a few KiB\)"):
        asyncio.run(_versions(KubeClient.build(_opts(kc))))


def test_a_token_expiring_within_the_next_tick_is_renewed_before_it_outside_any_deadline(
    server: FakeServer, tmp_path: Path
) -> None:
    """Issue 28 item 9: a token that would expire while a tick's requests run is renewed at the tick's start
    (refresh_credentials, outside the deadline), so no request of the tick waits on the plugin."""
    log = tmp_path / "plugin.log"
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        exec_changes={"apiVersion": V1, "interactiveMode": "Never"},
        plugin_env={"EVL_PLUGIN_LOG": str(log), "EVL_PLUGIN_API_VERSION": V1, "EVL_PLUGIN_EXPIRES_IN": "3600"},
    )
    client = KubeClient.build(_opts(kc))
    assert client.auth is not None and client.refresh_ahead >= 60
    clock = [dt.datetime.now(dt.UTC)]
    client.auth._now = lambda: clock[0]

    async def scenario() -> None:
        try:
            await client.refresh_credentials()
            await client.get_json("/version")
            assert len(plugin_runs(log)) == 1
            clock[0] += dt.timedelta(seconds=3600 - client.refresh_ahead / 2)  # not expired yet, but soon
            await client.refresh_credentials()
            assert len(plugin_runs(log)) == 2, "renewed ahead of its expiry, before the tick's requests"
            await client.get_json("/version")
            assert len(plugin_runs(log)) == 2
        finally:
            await client.close()

    asyncio.run(scenario())


def test_a_plugin_past_the_bound_is_waited_for_even_when_its_reader_fell_behind() -> None:
    """A loaded box: the plugin filled the pipe faster than the bounded read took it, so asyncio paused the pipe;
    after the kill the rest is drained, or ``Process.wait()`` (which waits for every pipe's end) never returns."""
    from recordings.recorder.exec_auth import _bounded

    async def run() -> tuple[bytes | None, int]:
        pipe = asyncio.subprocess.PIPE
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)", stdout=pipe
        )
        assert proc.stdout is not None
        reader = proc.stdout
        await asyncio.wait_for(_until_paused(reader), 60)  # fallen behind: the pipe is paused
        out = await _bounded(reader, proc)
        return out, await asyncio.wait_for(proc.wait(), 60)

    out, code = asyncio.run(run())
    assert out is None and code == -9


async def _until_paused(reader: asyncio.StreamReader) -> None:
    # the StreamReader paused its transport: more than twice its limit is buffered
    while not reader._paused:  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)
