"""The one place that builds HTTP clients and classifies HTTP failures.

Authentication (client certificates, bearer tokens, token files, exec plugins) comes from
lightkube's kubeconfig loader and httpx adapter, so the recorder authenticates exactly like
other lightkube tools; TLS verification stays on and HTTP/2 is used where offered.  Tokens
are never logged: error text is built from method, path and status only.
"""

from __future__ import annotations

import asyncio
import email.utils
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import orjson
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from ..errors import RecordingError
from .options import RecordOptions
from .rbac import rbac_hint


class AuthFailure(RecordingError):
    """401/403: retrying will not help, the recorder stops and says which RBAC it needs."""


class RequestFailed(Exception):
    """A request that failed for this tick (status, timeout, reset); the next may succeed."""

    def __init__(self, what: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.status = status
        self.retry_after = retry_after


def load_config(opts: RecordOptions) -> SingleConfig:
    """kubeconfig file → $KUBECONFIG / in-cluster service account / ~/.kube/config."""
    source = "--kubeconfig" if opts.kubeconfig else "kubeconfig"
    try:
        kc = KubeConfig.from_file(opts.kubeconfig) if opts.kubeconfig else KubeConfig.from_env()
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
        return cls(api, kubelet, str(single.cluster.server), opts.kubelet_direct, opts.timeout)

    async def close(self) -> None:
        await self.api.aclose()
        if self.kubelet is not None:
            await self.kubelet.aclose()

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
        """GET with backoff on 429 and on 5xx that carry Retry-After, up to ``deadline``."""
        http = self.kubelet if kubelet and self.kubelet is not None else self.api
        what = f"GET {httpx2.URL(url).path}"
        delay = 0.5
        while True:
            try:
                # A whole-request deadline: on a shared HTTP/2 connection a stalled stream
                # never trips httpx's per-read timeout while other streams keep data flowing.
                async with asyncio.timeout(self.timeout):
                    resp = await http.get(url)
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
            except (httpx2.TimeoutException, TimeoutError):
                raise RequestFailed(f"timeout for {what}") from None
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
