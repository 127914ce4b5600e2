"""Test support: the fake API server (a real HTTPS/HTTP2 process on 127.0.0.1), runners for
the real ``evictlens`` processes (``python -m recordings.cli ...``) and a secret scanner.

Named ``rec_support`` rather than living in conftest so ``import`` from test modules is
unambiguous even if other conftest files appear in the tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from recordings.reader import open_recording
from recordings.recorder.options import RecordOptions

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
REALDATA = Path(os.environ.get("EVICTLENS_REALDATA", REPO.parent / "shared" / "realdata"))


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(REPO), env.get("PYTHONPATH", "")])
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["EVICTLENS_MIN_INTERVAL"] = "0.1"  # the fake clusters tick faster than a kubelet (options.MIN_INTERVAL)
    for key in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(key, None)
    return env


def measured_env() -> dict[str, str]:
    """``child_env`` with polars' own thread pool (the suite runs one thread: tests/conftest.py): what a user's
    process runs with, for the tests that measure a process's peak memory."""
    env = child_env()
    env.pop("POLARS_MAX_THREADS", None)
    return env


@dataclass
class FakeServer:
    dir: Path
    nodes: int
    pods: int
    kubelet_ports: bool
    extra: list[str] = field(default_factory=list)  # more apiserver.server flags
    proc: subprocess.Popen[bytes] | None = None
    ready: dict[str, Any] = field(default_factory=dict)

    def start(self, port: int = 0) -> None:
        (self.dir / "ready.json").unlink(missing_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "apiserver.server",
            "--dir",
            str(self.dir),
            "--nodes",
            str(self.nodes),
            "--pods",
            str(self.pods),
            "--port",
            str(port),
        ]
        if self.kubelet_ports:
            cmd.append("--kubelet-ports")
        cmd += self.extra
        self.proc = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120  # a condition wait: a loaded 2-core box can take long to start Python
        while not (self.dir / "ready.json").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("fake API server did not start")
            time.sleep(0.05)
        self.ready = json.loads((self.dir / "ready.json").read_text())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(60)
        self.proc = None

    @property
    def kubeconfig(self) -> str:
        return str(self.ready["kubeconfig"])

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ready['port']}"

    def control(self, what: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        with httpx.Client(verify=ssl.create_default_context(cafile=self.ready["ca"]), trust_env=False) as c:
            r = c.post(f"{self.url}/_control/{what}", json=body or {})
            r.raise_for_status()
            return dict(r.json())

    def faults(self, **faults: Any) -> None:
        self.control("faults", faults)

    def stats(self) -> dict[str, int]:
        return dict(self.control("stats")["stats"])


@pytest.fixture(scope="module")
def fake_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """One server per test module (3 nodes × 4 pods); tests reset faults via ``fresh``."""
    server = FakeServer(tmp_path_factory.mktemp("apiserver"), nodes=3, pods=4, kubelet_ports=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(fake_cluster: FakeServer) -> Iterator[FakeServer]:
    from apiserver.app import DEFAULT_FAULTS

    fake_cluster.faults(**DEFAULT_FAULTS)
    yield fake_cluster
    fake_cluster.faults(**DEFAULT_FAULTS)


RecordProc = subprocess.Popen[str]


def start_record(args: list[str], env: dict[str, str] | None = None, **kw: Any) -> RecordProc:
    cmd = [sys.executable, "-m", "recordings.cli", "record", "--status", "plain", *args]
    return subprocess.Popen(
        cmd,
        env={**child_env(), **(env or {})},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def run_record(args: list[str], timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = start_record(args, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"recorder did not stop in {timeout}s: {err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


IN_PROCESS = frozenset({"import", "info", "pack", "unpack", "replay", "whatif", "explain", "scenario"})
"""Commands the helpers below run in the test's own process: they read and write files and end (no recorder, no
signals, no terminal), so a fresh interpreter (0.4 s of CPU for its imports) adds nothing to what is tested."""


def _in_process(args: tuple[str, ...]) -> bool:
    return bool(args) and args[0] in IN_PROCESS and "--help" not in args


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    if _in_process(args):
        from cli_here import run_here  # here: scripts that put only this folder on sys.path import this module

        from recordings.cli import main

        return run_here(main, list(args))
    return subprocess.run(
        [sys.executable, "-m", "recordings.cli", *args],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_evictlens(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The full ``evictlens`` command (replay, explain, whatif ... as well as the recordings commands); in this
    process for the :data:`IN_PROCESS` commands unless ``env`` changes the environment."""
    if env is None and _in_process(args):
        from cli_here import run_here  # here: scripts that put only this folder on sys.path import this module

        from replay.cli import main

        return run_here(main, list(args))
    return subprocess.run(
        [sys.executable, "-m", "replay.cli", *args],
        env={**child_env(), **(env or {})},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def recorder() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_record


def summary_files() -> list[Path]:
    found = sorted(REALDATA.glob("*/summary")) + sorted(REALDATA.glob("*/*stats_summary*.json"))
    assert found, f"no real summaries under {REALDATA}"
    return found


def wait_for(pred: Callable[[], bool], timeout: float = 60, what: str = "condition") -> None:
    """Poll ``pred`` until true; the deadline is generous (a loaded 2-core CI machine)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met in {timeout:.0f}s")
        time.sleep(0.05)


def write_kubeconfig(
    server: FakeServer,
    path: Path,
    *,
    exec_changes: dict[str, Any] | None = None,
    plugin_env: dict[str, str] | None = None,
    user: dict[str, Any] | None = None,
    cluster_changes: dict[str, Any] | None = None,
) -> Path:
    """A one-context kubeconfig for ``server``: by default its exec-plugin user, with
    ``exec_changes`` merged into the exec block (``None`` values delete a key) and
    ``plugin_env`` added to the plugin's environment; ``user`` replaces the user entirely."""
    import yaml

    base = yaml.safe_load(Path(server.kubeconfig).read_text())
    cluster = dict(next(c["cluster"] for c in base["clusters"] if c["name"] == "fake"))
    for key, value in (cluster_changes or {}).items():
        if value is None:
            cluster.pop(key, None)
        else:
            cluster[key] = value
    if user is None:
        exec_block = dict(next(u["user"]["exec"] for u in base["users"] if u["name"] == "exec"))
        exec_block["env"] = list(exec_block["env"]) + [{"name": k, "value": v} for k, v in (plugin_env or {}).items()]
        for key, value in (exec_changes or {}).items():
            if value is None:
                exec_block.pop(key, None)
            else:
                exec_block[key] = value
        user = {"exec": exec_block}
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "test",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "c", "user": "u"}}],
    }
    path.write_text(yaml.safe_dump(kc))
    path.chmod(0o600)
    return path


def plugin_runs(log: Path) -> list[dict[str, Any]]:
    """What the test exec plugin logged, one dict per run (see apiserver/exec_plugin.py)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def journal_frames(out: Path) -> list[dict[str, Any]]:
    """Every intact frame in a live recording's journal (read-only; a torn tail is skipped).

    The condition tests wait on: what the recorder has made durable so far.  Frames move
    into Parquet parts on a fold (every 60 ticks by default), so use it for short runs.
    """
    frames: list[dict[str, Any]] = []
    journal = out / "journal"
    for seg in sorted(journal.iterdir()) if journal.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):
            frames += _segment_frames(seg)
    return frames


_SEGMENTS: dict[Path, tuple[tuple[int, int, int], list[dict[str, Any]]]] = {}
"""Segment → ((inode, size, mtime ns), its intact frames): tests poll the journal every 50 ms while a segment
changes once a tick, and decoding a large first frame each time cost more CPU than the recorder under test."""


def _segment_frames(seg: Path) -> list[dict[str, Any]]:
    """The intact frames of one segment, decoded again only when the file changed (read-only callers)."""
    from recordings.journal import read_frames

    st = seg.stat()
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _SEGMENTS.get(seg)
    if cached is not None and cached[0] == key:
        return cached[1]
    frames = [payload for _end, payload in read_frames(seg)]
    if len(_SEGMENTS) > 256:
        _SEGMENTS.clear()
    _SEGMENTS[seg] = (key, frames)
    return frames


def tick_rows(out: Path) -> list[tuple[int, str, bool]]:
    """(tick, node, ok) of every tick row committed to the journal so far."""
    rows: list[tuple[int, str, bool]] = []
    for frame in journal_frames(out):
        cols = frame.get("tables", {}).get("ticks")
        if cols:
            rows += list(zip(cols["tick"], cols["node"], cols["ok"], strict=True))
    return rows


def committed_ticks(out: Path) -> int:
    return len({tick for tick, _node, _ok in tick_rows(out)})


class StderrLines:
    """Reads a running process's stderr on a thread, so tests can wait for a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        self.lines: list[str] = []
        self._stream = proc.stderr
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self, timeout: float = 30) -> str:
        """All of stderr, once the process closed it."""
        self._thread.join(timeout)
        return "".join(self.lines)


def kill_quietly(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(60)


def assert_no_secret(root: Path, marker: str) -> None:
    """Decode every table (Parquet is compressed) and also scan the raw bytes of every file."""
    rec = open_recording(root)
    for name in (
        "node_stats",
        "system_container_stats",
        "pod_stats",
        "container_stats",
        "volume_stats",
        "ticks",
        "objects",
        "evictions",
        "raw",
    ):
        df = rec.scan(name).collect()
        text = df.select(pl.all().cast(pl.String)).write_csv()
        assert marker not in text, name
    for f in root.rglob("*"):
        if f.is_file():
            assert marker.encode() not in f.read_bytes(), f


def record_options(**kw: Any) -> RecordOptions:
    """``record``'s options for a test that drives the recorder in-process: quiet, one-shot defaults, each
    overridden by name (``kubeconfig=``, ``output=``, ``timeout=`` …)."""
    base: dict[str, Any] = dict(
        output="rec",
        kubeconfig=None,
        context=None,
        nodes=None,
        interval=1.0,
        duration=None,
        kubelet_direct=False,
        keep_raw=False,
        append=False,
        concurrency=8,
        timeout=5.0,
        kubelet_port=None,
        kubelet_ca=None,
        status="none",
        watch=False,
    )
    return RecordOptions(**(base | kw))
