"""The one place that builds HTTP clients and classifies HTTP failures.

Authentication (client certificates, bearer tokens, token files) comes from lightkube's
kubeconfig loader and httpx adapter, so the recorder authenticates like other lightkube tools;
exec plugins run through :mod:`.exec_auth` (client.authentication.k8s.io/v1 and v1beta1, which
lightkube 1.0 does not fully support).  TLS verification stays on and HTTP/2 is used where
offered.  Tokens are never logged: error text is built from method, path and status only.

Failures are classified for the user: a TLS verification failure says so with the reason
(not "cannot connect"), a 401 is a credential problem (expired or rejected), only a 403 is
an RBAC problem, and a TLS alert about the client certificate names that certificate (not
the cluster CA).  ``transport`` (``httpx2.MockTransport`` in tests) replaces the network.

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
import contextlib
import email.utils
import os
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import msgspec
import orjson
import yaml
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import DEFAULT_KUBECONFIG, SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError

from kube.errors import RecordingError

from .exec_auth import CredentialError, ExecConfig, ExecCredentialAuth, cluster_info
from .options import RecordOptions
from .rbac import credential_hint, rbac_hint

SERVICE_ACCOUNT_ENV = "EVICTLENS_SERVICE_ACCOUNT_DIR"
LINGER_SECONDS = 60.0  # how long an abandoned request may keep draining in the background


class AuthFailure(CredentialError):
    """401 (credential rejected) or 403 (RBAC): retrying will not help, the recorder stops."""


class RequestFailed(Exception):
    """A request that failed for this tick (status, timeout, reset); the next may succeed.

    ``tls`` marks a TLS failure (wrong CA, refused client certificate): it will not heal.
    ``refused_certificate`` is the one-line problem when the server refused the client certificate.
    """

    def __init__(
        self,
        what: str,
        status: int | None = None,
        retry_after: float | None = None,
        *,
        tls: bool = False,
        refused_certificate: str | None = None,
    ) -> None:
        super().__init__(what)
        self.status = status
        self.retry_after = retry_after
        self.tls = tls
        self.refused_certificate = refused_certificate


# The alerts a TLS server sends about the certificate the client presented (RFC 8446 §6.2, as
# OpenSSL names them on receipt): the server refused the client certificate, whatever the CA
# the client trusts.  Under TLS 1.2 they end the handshake; under TLS 1.3 the server checks the
# certificate after the client's handshake is done, so the alert arrives on the first read.
CLIENT_CERTIFICATE_ALERTS = frozenset(
    {
        "TLSV1_ALERT_UNKNOWN_CA",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
        "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
        "TLSV1_ALERT_ACCESS_DENIED",
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
    }
)
PROBE_SECONDS = 3.0  # how long certificate_refusal waits for the server's verdict


def certificate_alert(exc: BaseException) -> str | None:
    """The received TLS alert about our client certificate behind ``exc`` (``tlsv1 alert unknown ca``)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        reason = getattr(cur, "reason", None) if isinstance(cur, ssl.SSLError) else None  # not always set
        if reason in CLIENT_CERTIFICATE_ALERTS:
            return str(reason).lower().replace("_", " ")
        cur = cur.__cause__ or cur.__context__
    return None


def client_certificate_name(loaded: LoadedConfig) -> str | None:
    """How the kubeconfig names the user's client certificate, for messages (never its content)."""
    user = loaded.user or {}
    name = loaded.single.context.user if loaded.single.context is not None else None
    if isinstance(user.get("client-certificate"), str) and user["client-certificate"]:
        try:
            return f"client-certificate {loaded.single.abs_file(user['client-certificate'])}"
        except ConfigError:
            return f"client-certificate {user['client-certificate']}"
    if user.get("client-certificate-data"):
        return f"client-certificate-data of user {name!r}" if name else "client-certificate-data"
    return None


def tls_failure(exc: BaseException) -> str | None:
    """The TLS reason behind a connection error, if TLS is what failed (cause chain walk)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {cur.verify_message or cur.reason or cur}"
        if isinstance(cur, ssl.SSLError):
            return f"TLS handshake failed: {cur.reason or cur}"
        cur = cur.__cause__ or cur.__context__
    return None


def _reason(exc: Exception) -> str:
    return network_reason(exc) if isinstance(exc, httpx2.HTTPError) else f"{type(exc).__name__}: {exc}"


def network_reason(exc: httpx2.HTTPError) -> str:
    """``ConnectError: [Errno 111] Connection refused`` rather than a bare class name."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class LoadedConfig:
    """The chosen context as lightkube sees it, plus the raw kubeconfig entries lightkube drops
    (an exec block's ``interactiveMode``/``provideClusterInfo``, a cluster's extensions)."""

    single: SingleConfig
    user: dict[str, Any] = field(default_factory=dict)
    cluster: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def _named(conf: dict[str, Any], key: str, name: str, inner: str) -> dict[str, Any] | None:
    for entry in conf.get(key) or []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(inner), dict):
            return dict(entry[inner])
    return None


KUBECONFIG_MAX_BYTES = 16 << 20  # kubeconfigs with hundreds of contexts and inline certificates stay far below


def _read_kubeconfig(path: Path, source: str) -> dict[str, Any]:
    """One kubeconfig file as a mapping; a missing, unreadable or malformed file names itself."""
    where = str(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(KUBECONFIG_MAX_BYTES + 1)  # bounded: ``--kubeconfig /dev/zero`` is one line
    except FileNotFoundError:
        raise RecordingError(f"kubeconfig file not found (from {source})", source=where) from None
    except OSError as exc:
        raise RecordingError(f"cannot read kubeconfig: {exc.strerror}", source=where) from None
    if len(data) > KUBECONFIG_MAX_BYTES:
        raise RecordingError(
            f"kubeconfig larger than {KUBECONFIG_MAX_BYTES >> 20} MiB: is it the right file?", source=where
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordingError(f"malformed kubeconfig: not UTF-8 text (at byte {exc.start})", source=where) from None
    try:
        conf = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = f"malformed kubeconfig: {line}{getattr(exc, 'problem', None) or exc}"
        raise RecordingError(problem, source=where) from None
    if conf is None:
        return {}  # an empty file is an empty config, as for kubectl
    if not isinstance(conf, dict):
        raise RecordingError("malformed kubeconfig: expected a mapping with clusters, contexts and users", source=where)
    for key in ("clusters", "contexts", "users"):
        if conf.get(key) is not None and not isinstance(conf[key], list):
            raise RecordingError(f"malformed kubeconfig: {key} must be a list", source=where)
    return conf


_CLUSTER_PATHS = ("certificate-authority",)
_USER_PATHS = ("client-certificate", "client-key", "tokenFile")


def _absolute(entry: dict[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    """Relative file references resolved against the kubeconfig that holds them (client-go
    ResolveLocalPaths), so entries keep their meaning once merged with other files."""
    out = dict(entry)
    for key in keys:
        value = out.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            out[key] = str(base / value)
    exec_block = out.get("exec")
    if isinstance(exec_block, dict):
        command = exec_block.get("command")
        if isinstance(command, str) and "/" in command and not Path(command).is_absolute():
            out["exec"] = dict(exec_block, command=str(base / command))
    return out


def merge_kubeconfigs(files: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """Merge kubeconfig files the way kubectl merges ``$KUBECONFIG`` (client-go loader.go).

    The first file to set a value wins and is never overridden: ``current-context`` comes from
    the first file that sets it, and each cluster, context and user is taken whole from the
    first file that defines that name (a later file's entry of the same name is ignored, even
    its non-conflicting fields).  Relative paths are resolved per file before merging.
    """
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    named: dict[str, dict[str, dict[str, Any]]] = {"clusters": {}, "contexts": {}, "users": {}}
    inner = {"clusters": "cluster", "contexts": "context", "users": "user"}
    for path, conf in files:
        base = path.parent
        for key, value in conf.items():
            if key in named or value in (None, "", {}, []):
                continue
            merged.setdefault(key, value)
        for key, entries in named.items():
            for entry in conf.get(key) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or entry["name"] in entries:
                    continue
                body = entry.get(inner[key])
                if isinstance(body, dict) and key != "contexts":
                    body = _absolute(body, _CLUSTER_PATHS if key == "clusters" else _USER_PATHS, base)
                entries[entry["name"]] = {**entry, inner[key]: body}
    for key, entries in named.items():
        merged[key] = list(entries.values())
    return merged


def _select(conf: dict[str, Any], context: str | None, where: str, path: Path | None) -> LoadedConfig:
    """The chosen (or current) context of a kubeconfig, checked entry by entry."""
    name = context or conf.get("current-context")
    if not name:
        raise RecordingError("no current-context is set; choose one with --context", source=where)
    ctx = _named(conf, "contexts", name, "context")
    if ctx is None:
        known = ", ".join(sorted(str(c.get("name")) for c in conf.get("contexts") or [] if isinstance(c, dict)))
        problem = f"context {name!r} not found in {where} (contexts: {known or 'none'})"
        raise RecordingError(problem, source="--context" if context else "current-context")
    cluster = _named(conf, "clusters", str(ctx.get("cluster")), "cluster")
    if cluster is None:
        problem = f"context {name!r} names cluster {ctx.get('cluster')!r}, which is not defined"
        raise RecordingError(problem, source=where)
    user = _named(conf, "users", str(ctx.get("user")), "user") if ctx.get("user") else {}
    if user is None:
        raise RecordingError(f"context {name!r} names user {ctx.get('user')!r}, which is not defined", source=where)
    try:
        single = KubeConfig.from_dict(conf, fname=path).get(context_name=name)
    except (ConfigError, KeyError, TypeError, ValueError, msgspec.ValidationError) as exc:
        raise RecordingError(f"malformed kubeconfig: {str(exc).strip() or type(exc).__name__}", source=where) from None
    assert single is not None
    return LoadedConfig(single, user, cluster, path)


def _load_file(path: Path, context: str | None, source: str) -> LoadedConfig:
    path = path.expanduser()
    conf = _read_kubeconfig(path, source)
    return _select(conf, context, str(path), path.resolve())


def kubeconfig_files(explicit: str | None) -> tuple[list[Path], str]:
    """The kubeconfig files kubectl would read, and what chose them (for error messages).

    ``--kubeconfig`` (one file, which must exist), else ``$KUBECONFIG`` (a list joined by
    the OS path separator; empty entries and missing files are ignored, as kubectl does),
    else ``~/.kube/config`` when it exists.  An empty list means: no kubeconfig at all.
    """
    if explicit:
        return [Path(explicit).expanduser()], "--kubeconfig"
    env = os.environ.get("KUBECONFIG")
    if env:
        seen: list[Path] = []
        for part in env.split(os.pathsep):
            if part and Path(part).expanduser() not in seen and Path(part).expanduser().exists():
                seen.append(Path(part).expanduser())
        return seen, "$KUBECONFIG"
    default = Path(DEFAULT_KUBECONFIG).expanduser()
    return ([default] if default.exists() else []), "~/.kube/config"


def load_config(opts: RecordOptions) -> LoadedConfig:
    """Credentials chosen as kubectl chooses them.

    ``--kubeconfig``, else ``$KUBECONFIG`` (files merged: the first to set a value wins), else
    ``~/.kube/config``; only when none of these exists, the in-cluster service account
    (client-go's deferred loading: in-cluster only for an empty kubeconfig).  The service-account
    directory is lightkube's ``service_account`` parameter; the ``EVICTLENS_SERVICE_ACCOUNT_DIR``
    variable moves it away from the root-owned /var/run/secrets/kubernetes.io/serviceaccount so
    the in-cluster path can be tested.  An unknown context names ``--context``; a broken file
    names the file.
    """
    files, chosen_by = kubeconfig_files(opts.kubeconfig)
    if opts.kubeconfig or len(files) == 1:
        loaded = _load_file(files[0], opts.context, chosen_by)
    elif files:
        docs = [(f.resolve(), _read_kubeconfig(f, chosen_by)) for f in files]
        where = f"$KUBECONFIG ({os.pathsep.join(str(f) for f in files)})"
        loaded = _select(merge_kubeconfigs(docs), opts.context, where, docs[0][0])
    else:
        sa_dir = os.environ.get(SERVICE_ACCOUNT_ENV, SERVICE_ACCOUNT)
        try:
            kc = KubeConfig.from_service_account(sa_dir)
        except (ConfigError, KeyError, OSError):
            kc = None
        if kc is None or opts.context is not None:
            looked = os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
            why = "" if kc is None else f"; --context {opts.context} needs a kubeconfig"
            problem = f"no kubeconfig found ({chosen_by}: {looked}) and not running in a cluster{why}"
            raise RecordingError(
                problem,
                source="--context" if kc is not None else "kubeconfig",
                hint="pass --kubeconfig FILE or set KUBECONFIG",
            )
        single = kc.get()
        assert single is not None
        loaded = LoadedConfig(single)
    if loaded.single.user is None:
        raise RecordingError("context has no user", source="--context")
    return loaded


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


REFRESH_AHEAD = 60.0
"""At least this long before an exec token expires, the plugin runs again at the start of a tick."""


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

    auth: ExecCredentialAuth | None = None
    client_cert: str | None = None  # how the kubeconfig names the client certificate, if there is one
    refresh_ahead: float = REFRESH_AHEAD  # a token expiring sooner is renewed before a tick (build: interval+timeout)

    @classmethod
    def build(cls, opts: RecordOptions, transport: httpx2.AsyncBaseTransport | None = None) -> KubeClient:
        loaded = load_config(opts)
        single = loaded.single
        params = client_adapter.ConnectionParams(http2=not opts.http1, timeout=httpx2.Timeout(opts.timeout))
        exec_auth = None
        raw_exec = loaded.user.get("exec")
        if isinstance(raw_exec, dict) and not (loaded.user.get("token") or loaded.user.get("tokenFile")):
            user_name = str(single.context.user)
            exec_auth = ExecCredentialAuth(ExecConfig.parse(raw_exec, user=user_name), None)
            if exec_auth.config.provide_cluster_info:
                exec_auth.cluster = cluster_info(loaded.cluster, loaded.path)
            assert single.user is not None
            single = single._replace(user=msgspec.structs.replace(single.user, exec=None))
        try:
            kwargs: dict[str, Any] = params.httpx_params(single)
        except (ConfigError, OSError, ssl.SSLError) as exc:
            raise RecordingError(f"cannot set up TLS or credentials: {exc}", source="kubeconfig") from None
        if exec_auth is not None:
            kwargs["auth"] = exec_auth
        if transport is not None:
            kwargs["transport"] = transport
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
            # summaries, /pods (which may outlive a tick) and /configz each run up to --concurrency at once
            klimits = httpx2.Limits(max_connections=opts.concurrency * 3, max_keepalive_connections=None)
            kubelet = httpx2.AsyncClient(**kkwargs, limits=klimits)
        server = str(single.cluster.server)
        client = cls(
            api,
            kubelet,
            server,
            opts.kubelet_direct,
            opts.timeout,
            _kwargs=kwargs,
            auth=exec_auth,
            client_cert=client_certificate_name(loaded),
        )
        client.refresh_ahead = max(REFRESH_AHEAD, opts.interval + opts.timeout)
        return client

    def dedicated(self) -> KubeClient:
        """Same server and credentials on a connection of its own: one per list+watch loop."""
        api = httpx2.AsyncClient(**self._kwargs, limits=httpx2.Limits(max_connections=4, max_keepalive_connections=1))
        child = KubeClient(
            api,
            None,
            self.server,
            self.direct,
            self.timeout,
            _kwargs=self._kwargs,
            auth=self.auth,
            client_cert=self.client_cert,
        )
        self._children.append(child)
        return child

    async def refresh_credentials(self) -> None:
        """Run the exec plugin now if its token is missing, expired, or expires before this tick's requests
        are done (``refresh_ahead``), outside any request deadline: a plugin that prompts, or a slow cloud
        login, must not count as a timeout, and a token expiring mid-tick must not cost the tick."""
        if self.auth is not None:
            await self.auth.credential(ahead=self.refresh_ahead)

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

    def _check(self, resp: httpx2.Response, what: str, *, kubelet: bool = False) -> None:
        if resp.status_code == 401:
            raise AuthFailure(f"unauthorized (401) for {what}; {credential_hint(kubelet)}")
        if resp.status_code == 403:
            raise AuthFailure(f"forbidden (403) for {what}; {rbac_hint(self.direct)}")
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
        direct = kubelet and self.kubelet is not None
        http = self.kubelet if direct and self.kubelet is not None else self.api
        what = f"GET {httpx2.URL(url).path}"
        delay = 0.5
        retried = False
        while True:
            limit = self.timeout
            if deadline is not None:
                # The tick's deadline bounds every attempt: what has not answered by then is a gap.
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestFailed(f"timeout for {what}")
                limit = min(limit, left)
            try:
                # A whole-request deadline: on a shared HTTP/2 connection a stalled stream
                # never trips httpx's per-read timeout while other streams keep data flowing.
                resp = await self._attempt(http, url, limit)
                self._check(resp, what, kubelet=direct)
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
            # A TLS alert on the first read of a TLS 1.3 connection escapes httpcore2 unwrapped.
            except (httpx2.NetworkError, httpx2.TimeoutException, httpx2.RemoteProtocolError, ssl.SSLError) as exc:
                tls = tls_failure(exc)
                if tls is not None:
                    refused = self._refused(certificate_alert(exc), kubelet=direct)
                    raise RequestFailed(f"{tls} for {what}", tls=True, refused_certificate=refused) from None
                if not retried and (deadline is None or time.monotonic() < deadline):
                    retried = True
                    self.retries += 1
                    continue
                word = "timeout" if isinstance(exc, httpx2.TimeoutException) else _reason(exc)
                raise RequestFailed(f"{word} for {what}") from None
            except httpx2.HTTPError as exc:
                raise RequestFailed(f"{tls_failure(exc) or network_reason(exc)} for {what}") from None

    def _refused(self, alert: str | None, *, kubelet: bool = False) -> str | None:
        """The one-line problem for a TLS alert about the client certificate; None for other failures."""
        if alert is None:
            return None
        server = "the kubelet" if kubelet else "the API server"
        if self.client_cert is None:
            return (
                f"{server} requires a client certificate ({alert}) and the kubeconfig's user has none; "
                "set client-certificate and client-key, or a token"
            )
        return (
            f"{server} refused the client certificate ({self.client_cert}): {alert}; the certificate must be "
            "issued by the cluster's client CA and be valid now (check client-certificate and client-key)"
        )

    async def certificate_refusal(self) -> str | None:
        """Whether the API server refuses our client certificate, for a failure with no TLS reason.

        Under TLS 1.3 the server judges the client certificate after the client's handshake is
        done; with a request already sent, its alert is lost in a connection reset and the
        request fails with a bare ``ReadError``.  So handshake again, send nothing and read: a
        refusing server answers with its alert (Go's crypto/tls sends ``bad certificate``), or
        closes the connection at once without one (Python's asyncio TLS servers), while a
        server that took the certificate waits for a request (HTTP/1.1) or sends its HTTP/2
        SETTINGS.  None when the server does neither within ``PROBE_SECONDS``.
        """
        ctx = self._kwargs.get("verify")
        url = httpx2.URL(self.server)
        if not isinstance(ctx, ssl.SSLContext) or url.scheme != "https":
            return None
        host, port = url.host, url.port or 443
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(PROBE_SECONDS):
                reader, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=host)
                if not await reader.read(1) and self.client_cert is not None:
                    return self._refused("the server closed the connection right after the TLS handshake")
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            return self._refused(certificate_alert(exc))
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
        return None

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
        except (httpx2.HTTPError, ssl.SSLError) as exc:
            raise RequestFailed(f"{tls_failure(exc) or _reason(exc)} for {what}") from None
