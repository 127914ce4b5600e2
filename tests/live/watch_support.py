"""Running ``evictlens watch`` as a real process: its JSON lines and stderr read on threads, waited on."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def env() -> dict[str, str]:
    from rec_support import child_env

    return child_env()


def run_watch(
    *args: str, timeout: float = 120, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay.cli", "watch", *args],
        env={**env(), **(extra_env or {})},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def lines_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


class Watch:
    """``evictlens watch ARGS`` running; ``lines`` fills as it prints."""

    def __init__(self, *args: str, extra_env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "replay.cli", "watch", *args],
            env={**env(), **(extra_env or {})},
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.err: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.append(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)

    def wait_for(self, pred: Callable[[], bool], what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if self.proc.poll() is not None and not pred():
                time.sleep(0.2)  # the readers may still be draining the pipes
                if pred():
                    return
                raise AssertionError(
                    f"watch exited ({self.proc.returncode}) before {what}: {''.join(self.err)[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not seen in {timeout:.0f}s: {''.join(self.err)[-2000:]}")
            time.sleep(0.05)

    def port(self) -> int:
        self.wait_for(lambda: any("serving /metrics on port" in e for e in self.err), "the metrics port")
        found = next(re.search(r"port (\d+)", e) for e in self.err if "serving /metrics" in e)
        assert found is not None
        return int(found.group(1))

    def has(self, **fields: Any) -> bool:
        return any(all(line.get(k) == v for k, v in fields.items()) for line in list(self.lines))

    def stop(self, timeout: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(60)
            raise
        for t in self._threads:
            t.join(30)
        return int(self.proc.returncode)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait(60)


def scrape(port: int) -> str:
    import httpx

    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text


def sample_value(text: str, name: str, **labels: str) -> float | None:
    """The value of the series ``name{labels...}`` in a text exposition (labels matched as a subset)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        series, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in series for k, v in labels.items()):
            return float(value)
    return None
