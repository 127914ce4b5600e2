"""``--webhook URL``: each incident's report.json POSTed on a thread of its own, so no tick waits on it.

Retries with exponential back-off (``BACKOFF_S`` × 2ⁿ, ``ATTEMPTS`` tries, each with ``TIMEOUT_S``) on a refused or
timed-out connection and on 5xx/429 answers; a 4xx other than 429 is final. A delivery that fails for good is one
log line and counted (the incident stays on disk: nothing is lost). Credentials in the URL (``user:pass@``) go in
an ``Authorization: Basic`` header, never in a log line: logs name the URL as scheme, host, port and path only.
The body is the report (recordings are redacted, so it holds no secret).
"""

from __future__ import annotations

import base64
import contextlib
import os
import queue
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from kube.errors import InputError

ATTEMPTS = 5
# the first retry's wait, doubled for each next one; the environment override exists so tests need not wait
BACKOFF_S = float(os.environ.get("EVICTLENS_WEBHOOK_BACKOFF_S", "1.0"))
TIMEOUT_S = 10.0
QUEUE_MAX = 1000


def check_url(url: str) -> SplitResult:
    """One line naming ``--webhook`` for anything but an http(s) URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            "expected an http:// or https:// URL with a host, e.g. https://hooks.example/evictlens", field="--webhook"
        )
    try:
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise InputError("the URL's port is not a number from 0 to 65535", field="--webhook") from None
    return parts


def safe_url(parts: SplitResult) -> str:
    """The URL as logs may show it: no user, password, query or fragment."""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass
class Delivery:
    name: str
    body: bytes


class WebhookPoster:
    def __init__(
        self,
        url: str,
        *,
        log: Callable[[str], None],
        failed: Callable[[], None] = lambda: None,
        delivered: Callable[[], None] = lambda: None,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        parts = check_url(url)
        self.shown = safe_url(parts)
        self._address = (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        self._target = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path or "/", parts.query, ""))
        self._auth = None
        if parts.username is not None:
            token = f"{parts.username}:{parts.password or ''}".encode()
            self._auth = "Basic " + base64.b64encode(token).decode()
        self.log, self.failed, self.delivered = log, failed, delivered
        self.attempts, self.backoff_s, self.timeout_s = attempts, backoff_s, timeout_s
        self._queue: queue.Queue[Delivery | None] = queue.Queue(QUEUE_MAX)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evictlens-webhook", daemon=True)
        self._thread.start()

    def post(self, name: str, body: bytes) -> None:
        """Queue one report; never blocks (a full queue is logged and counted)."""
        try:
            self._queue.put_nowait(Delivery(name, body))
        except queue.Full:
            self.failed()
            self.log(f"webhook {self.shown}: incident {name} not sent ({QUEUE_MAX} reports already waiting)")

    def close(self, wait_s: float = 5.0) -> None:
        """Stop after what is queued, waiting at most ``wait_s`` (back-off waits are cut short)."""
        self._stop.set()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(wait_s)
        left = self._queue.qsize()
        if self._thread.is_alive() or left:
            self.log(f"webhook {self.shown}: stopped with reports not sent (they stay in DIR/incidents)")

    def _probe(self) -> None:
        """Say at once when the webhook cannot be reached (the recording goes on; each report is still tried)."""
        try:
            socket.create_connection(self._address, timeout=self.timeout_s).close()
        except OSError as exc:
            self.log(
                f"webhook {self.shown} cannot be reached now ({exc.strerror or exc}): each incident is still tried, "
                "with back-off, and kept under DIR/incidents"
            )

    def _run(self) -> None:
        self._probe()
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._deliver(item)

    def _deliver(self, item: Delivery) -> None:
        problem = ""
        for attempt in range(self.attempts):
            if attempt and self._stop.wait(self.backoff_s * 2 ** (attempt - 1)):
                problem += " (stopping)"
                break
            retry, problem = self._once(item.body)
            if not problem:
                self.delivered()
                return
            if not retry:
                break
        self.failed()
        self.log(f"webhook {self.shown}: incident {item.name} not delivered after {attempt + 1} attempts: {problem}")

    def _once(self, body: bytes) -> tuple[bool, str]:
        """One POST: (worth retrying, problem or empty)."""
        headers: dict[str, Any] = {"Content-Type": "application/json", "User-Agent": "evictlens-flight-recorder"}
        if self._auth:
            headers["Authorization"] = self._auth
        req = urllib.request.Request(self._target, data=body, headers=headers, method="POST")
        try:  # the environment's proxy settings apply (HTTPS_PROXY, NO_PROXY), as for any client in a pod
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                resp.read(1 << 16)
                return False, ""
        except urllib.error.HTTPError as exc:
            return exc.code >= 500 or exc.code == 429, f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            text = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
            return True, text or type(exc).__name__
