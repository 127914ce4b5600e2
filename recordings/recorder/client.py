"""The one place that builds HTTP clients and classifies HTTP failures.

Authentication (client certificates, bearer tokens, token files, exec plugins) comes from
lightkube's kubeconfig loader and httpx adapter, so the recorder authenticates exactly like
other lightkube tools; TLS verification stays on and HTTP/2 is used where offered.  Tokens
are never logged: error text is built from method, path and status only.

HTTP/2 rules (httpcore2 multiplexes every request to one origin over one connection):

* **A watch never shares a connection.**  httpcore2 reads a connection on behalf of all its
  streams under one lock, and a stream whose data another stream already read still waits
  for that lock.  An idle watch (no read timeout) holding the lock stalls every other
  response on the connection until the next watch event — a 25 000-pod list never finished.
  Each list+watch loop therefore gets its own client (:meth:`KubeClient.dedicated`); the
  shared client carries only short requests that all have data coming.
* **A late request is abandoned, not cancelled.**  Cancelling a request in the middle of a
  TLS write loses a TLS record (anyio then marks the stream broken) or HPACK state, and a
  cancelled stream is never reset, so its unread data eats the connection's flow-control
  window for good: either way every stream on the connection fails.  A request past its
  time is reported as a timeout while it keeps running in the background, draining its
  response; only after ``LINGER_SECONDS`` is it cancelled.  (Its stream keeps counting
  against SETTINGS_MAX_CONCURRENT_STREAMS until the server ends it, cancelled or not:
  cancelling hundreds at once made h2 refuse new streams, LocalProtocolError.)
* **A connection-level failure is retried once** (read/write/protocol errors, a read
  timeout raised by another stream's read): they hit every stream in flight at once, and
  the pool opens a fresh connection for the retry.  Not retried: statuses (apart from
  429/5xx with Retry-After) and our own deadline.
* Stream concurrency stays below the server's SETTINGS_MAX_CONCURRENT_STREAMS: httpcore2
  queues requests beyond it on the connection (the wait counts against the timeout).
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from ..errors import RecordingError
from .options import RecordOptions
from .rbac import rbac_hint

SERVICE_ACCOUNT_ENV = "EVICTLENS_SERVICE_ACCOUNT_DIR"
LINGER_SECONDS = 60.0  # how long an abandoned request may keep draining in the background


class AuthFailure(RecordingError):
    """401/403: retrying will not help, the recorder stops and says which RBAC it needs."""


class RequestFailed(Exception):
    """A request that failed for this tick (status, timeout, reset); the next may succeed."""

    def __init__(self, what: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.status = status
        self.retry_after = retry_after


def load_config(opts: RecordOptions) -> SingleConfig:
    """--kubeconfig, else lightkube's order: in-cluster service account, $KUBECONFIG, ~/.kube/config.

    The service-account directory is lightkube's ``service_account`` parameter; the
    ``EVICTLENS_SERVICE_ACCOUNT_DIR`` variable moves it away from the root-owned
    /var/run/secrets/kubernetes.io/serviceaccount so the in-cluster path can be tested.
    """
    source = "--kubeconfig" if opts.kubeconfig else "kubeconfig"
    try:
        if opts.kubeconfig:
            kc = KubeConfig.from_file(opts.kubeconfig)
        else:
            kc = KubeConfig.from_env(service_account=os.environ.get(SERVICE_ACCOUNT_ENV, SERVICE_ACCOUNT))
        single = kc.get(context_name=opts.context)
    except (ConfigError, OSError, KeyError, ValueError) as exc:
        text = str(exc).strip() or type(exc).__name__
        raise RecordingError(f"cannot load cluster credentials: {text}", source=source) from None
    except Exception as exc:  # lightkube reports malformed files with parser-specific errors
        raise RecordingError(f"malformed kubeconfig: {type(exc).__name__}: {exc}", source=source) from None
    if single is None or single.user is None:
        raise RecordingError("context has no user", source="--context")
    return single


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After is delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


@dataclass
class KubeClient:
    """API server client plus, for --kubelet-direct, a client for the kubelets' port 10250."""

    api: httpx2.AsyncClient
    kubelet: httpx2.AsyncClient | None
    server: str
    direct: bool
    timeout: float = 5.0
    retries: int = 0  # connection-level failures retried by this client
    _kwargs: dict[str, Any] = field(default_factory=dict, repr=False)
    _children: list[KubeClient] = field(default_factory=list, repr=False)
    _lingering: dict[asyncio.Task[httpx2.Response], asyncio.TimerHandle] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, opts: RecordOptions) -> KubeClient:
        single = load_config(opts)
        params = client_adapter.ConnectionParams(http2=not opts.http1, timeout=httpx2.Timeout(opts.timeout))
        try:
            kwargs: dict[str, Any] = params.httpx_params(single)
        except (ConfigError, OSError, ssl.SSLError) as exc:
            raise RecordingError(f"cannot set up TLS or credentials: {exc}", source="kubeconfig") from None
        limits = httpx2.Limits(max_connections=max(opts.concurrency, 8) + 8, max_keepalive_connections=None)
        api = httpx2.AsyncClient(**kwargs, limits=limits)
        kubelet = None
        if opts.kubelet_direct:
            kkwargs = dict(kwargs, base_url="")
            if opts.kubelet_ca:
                ctx = ssl.create_default_context(cafile=opts.kubelet_ca)
                cert = client_adapter.user_cert(single.user, single.abs_file) if single.user else None
                if cert:
                    ctx.load_cert_chain(*cert)
                kkwargs["verify"] = ctx
            klimits = httpx2.Limits(max_connections=opts.concurrency * 2, max_keepalive_connections=None)
            kubelet = httpx2.AsyncClient(**kkwargs, limits=klimits)
        return cls(api, kubelet, str(single.cluster.server), opts.kubelet_direct, opts.timeout, _kwargs=kwargs)

    def dedicated(self) -> KubeClient:
        """Same server and credentials on a connection of its own: one per list+watch loop."""
        api = httpx2.AsyncClient(**self._kwargs, limits=httpx2.Limits(max_connections=4, max_keepalive_connections=1))
        child = KubeClient(api, None, self.server, self.direct, self.timeout, _kwargs=self._kwargs)
        self._children.append(child)
        return child

    async def close(self) -> None:
        for child in self._children:
            await child.close()
        tasks = list(self._lingering)
        for task in tasks:
            self._lingering.pop(task).cancel()
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.api.aclose()
        if self.kubelet is not None:
            await self.kubelet.aclose()

    def _linger(self, task: asyncio.Task[httpx2.Response]) -> None:
        """Let an abandoned request finish in the background (see the module notes)."""
        self._lingering[task] = asyncio.get_running_loop().call_later(LINGER_SECONDS, task.cancel)

        def done(t: asyncio.Task[httpx2.Response]) -> None:
            handle = self._lingering.pop(t, None)
            if handle is not None:
                handle.cancel()
            if not t.cancelled():
                t.exception()  # retrieved: a failure here was already reported as a timeout

        task.add_done_callback(done)

    async def _attempt(self, http: httpx2.AsyncClient, url: str, limit: float) -> httpx2.Response:
        """One GET, body read; ``TimeoutError`` after ``limit`` s, leaving the request running."""
        task = asyncio.ensure_future(http.get(url))
        try:
            done, _ = await asyncio.wait({task}, timeout=limit)
        except asyncio.CancelledError:
            task.cancel()  # the recorder is stopping: the connection goes with it
            raise
        if not done:
            self._linger(task)
            raise TimeoutError
        return task.result()

    def _check(self, resp: httpx2.Response, what: str) -> None:
        if resp.status_code in (401, 403):
            word = "unauthorized (401)" if resp.status_code == 401 else "forbidden (403)"
            raise AuthFailure(f"{word} for {what}; {rbac_hint(self.direct)}")
        if resp.status_code >= 400:
            raise RequestFailed(
                f"HTTP {resp.status_code} for {what}",
                resp.status_code,
                retry_after_seconds(resp.headers.get("retry-after")),
            )

    async def get(self, url: str, *, kubelet: bool = False, deadline: float | None = None) -> bytes:
        """GET with backoff on 429 and on 5xx that carry Retry-After, up to ``deadline``.

        Each attempt has ``timeout`` seconds; an attempt that failed with its connection (not
        with a status) is retried once if ``deadline`` has not passed, within what is left.
        """
        http = self.kubelet if kubelet and self.kubelet is not None else self.api
        what = f"GET {httpx2.URL(url).path}"
        delay = 0.5
        retried = False
        while True:
            limit = self.timeout
            if retried and deadline is not None:
                limit = max(0.1, min(limit, deadline - time.monotonic()))
            try:
                # A whole-request deadline: on a shared HTTP/2 connection a stalled stream
                # never trips httpx's per-read timeout while other streams keep data flowing.
                resp = await self._attempt(http, url, limit)
                self._check(resp, what)
                return resp.content
            except RequestFailed as exc:
                status, wait = exc.status or 0, exc.retry_after
                if status != 429 and not (status >= 500 and wait is not None):
                    raise
                wait = delay if wait is None else wait
                delay = min(delay * 2, 30.0)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise
                await asyncio.sleep(wait)
            except TimeoutError:
                raise RequestFailed(f"timeout for {what}") from None
            except (httpx2.NetworkError, httpx2.TimeoutException, httpx2.RemoteProtocolError) as exc:
                if not retried and (deadline is None or time.monotonic() < deadline):
                    retried = True
                    self.retries += 1
                    continue
                word = "timeout" if isinstance(exc, httpx2.TimeoutException) else type(exc).__name__
                raise RequestFailed(f"{word} for {what}") from None
            except httpx2.HTTPError as exc:
                raise RequestFailed(f"{type(exc).__name__} for {what}") from None

    async def get_json(self, url: str, **kw: Any) -> Any:
        body = await self.get(url, **kw)
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            raise RequestFailed(f"invalid JSON from GET {httpx2.URL(url).path}") from None

    @asynccontextmanager
    async def stream_lines(self, url: str) -> AsyncIterator[AsyncIterator[str]]:
        """A watch stream: one JSON event per line; errors classified like :meth:`get`."""
        what = f"GET {httpx2.URL(url).path} (watch)"
        try:
            async with self.api.stream("GET", url, timeout=httpx2.Timeout(self.api.timeout.connect, read=None)) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                self._check(resp, what)
                yield resp.aiter_lines()
        except httpx2.HTTPError as exc:
            raise RequestFailed(f"{type(exc).__name__} for {what}") from None
