"""Test support for the flight recorder: a loopback webhook receiver, the incidents a recording holds, and
``evictlens record`` (the flight recorder) as a real process against the fake API server."""

from __future__ import annotations

import http.server
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from flight.store import REPORT_JSON

DEADLINE = 240.0
"""Seconds a wait on the recorder may take: generous, the suite runs on a loaded 2-core machine (a whole run at load
30 took minutes)."""


@dataclass
class Receiver:
    """A loopback webhook: answers 500 to the first ``fail_first`` POSTs, then 200; keeps every body."""

    fail_first: int
    got: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> str:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = 500 if len(owner.got) < owner.fail_first else 200
                owner.got.append((status, dict(self.headers), body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def delivered(self) -> list[dict[str, Any]]:
        return [orjson.loads(body) for status, _h, body in self.got if status == 200]


def incidents(out: Path, kind: str) -> list[Path]:
    root = out / "incidents"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if f"-{kind}-" in p.name and (p / REPORT_JSON).is_file())


def report(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads((path / REPORT_JSON).read_bytes())
    return doc


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def start_flight(args: list[str], env: dict[str, str] | None = None) -> Any:
    import subprocess
    import sys

    from rec_support import REPO, child_env

    return subprocess.Popen(
        [sys.executable, "-m", "replay.cli", "record", "--status", "plain", *args],
        env={**child_env(), "EVICTLENS_WEBHOOK_BACKOFF_S": "0.05", **(env or {})},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def evictlens(*args: str) -> subprocess.CompletedProcess[str]:
    """``evictlens ARGS`` through rec_support.run_evictlens (a real process with this module's deadline, or this
    process for the commands that only read and write files)."""
    from rec_support import run_evictlens

    return run_evictlens(*args, timeout=DEADLINE)
