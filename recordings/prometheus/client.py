"""A Prometheus HTTP API client (``/api/v1/query``, ``/api/v1/query_range``) that behaves like a
Grafana data source: bearer token, basic auth, client certificate, custom CA, extra headers.

Why its own module: every failure has to end as one line naming the query (exit 2), a busy or
restarting server (429, 5xx, a dropped connection) is retried with exponential back-off, and a
range is split so no request asks for more than the server's 11,000 points per series
(``query_range`` refuses larger resolutions: prometheus/web/api/v1/api.go, "exceeded maximum
resolution of 11,000 points per timeseries"). Thanos, Mimir and VictoriaMetrics serve the same API.
"""

from __future__ import annotations

import queue
import random
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson
import polars as pl

from kube.errors import InputError

MAX_BODY_BYTES = 256 << 20
"""The largest answer one query may bring (a window sized by --memory-budget asks for far less)."""
_ENCODING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
MAX_POINTS = 11_000
"""Prometheus' per-series limit on a range query's resolution (points = (end - start) / step + 1)."""

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
Pending = dict[str, list["Future[Any]"]]


class PrometheusError(InputError):
    """The server (or the way to it) failed a query: one line naming the query, exit 2."""


@dataclass(frozen=True)
class Series:
    """One series of a query result: its labels, sample times (s) and values as float columns.

    Why columns, not the API's ``[time, "value"]`` pairs: a pair kept as Python objects costs ~150
    bytes, a sample here 16, and a window of a few thousand pods holds millions of them. The columns
    are zero-copy slices of one response's (converted in bulk right after parsing: per-sample Python
    floats were most of an import's CPU); "NaN", "+Inf" and "-Inf" become the floats they name."""

    labels: Mapping[str, str]
    times: pl.Series
    values: pl.Series

    @property
    def samples(self) -> list[tuple[float, float]]:
        """(time in seconds, value) in time order."""
        return list(zip(self.times.to_list(), self.values.to_list(), strict=True))

    def __len__(self) -> int:
        return self.times.len()


def make_series(labels: Mapping[str, str], pairs: Sequence[Sequence[Any]]) -> Series:
    """A Series from the API's ``[time, "value"]`` pairs (tests, small results)."""
    return _columns([labels], [pairs])[0]


def _columns(labels: Sequence[Mapping[str, str]], pairs: Sequence[Sequence[Sequence[Any]]]) -> list[Series]:
    """Convert one response in bulk: two flat columns, then a zero-copy slice per series."""
    times = pl.Series([p[0] for ps in pairs for p in ps], dtype=pl.Float64, strict=True)
    raw = pl.Series([p[1] for ps in pairs for p in ps], dtype=pl.String, strict=True)
    values = raw.cast(pl.Float64, strict=False)
    if values.null_count() > raw.null_count():  # "abc" is no number, and must not vanish as a missing sample
        bad = raw.filter(values.is_null() & raw.is_not_null()).head(1).to_list()
        raise ValueError(f"sample value {bad[0]!r} is not a number")
    out, at = [], 0
    for lab, ps in zip(labels, pairs, strict=True):
        n = len(ps)
        out.append(Series(lab, times.slice(at, n), values.slice(at, n)))
        at += n
    return out


@dataclass(frozen=True)
class Block:
    """One query's answer as columns: each series' labels (its index is its ``sid``) and every sample as a row
    (``sid``, ``t`` in seconds, ``value``), in series then time order.

    Why: a window of 11,000 pods is ~10^5 series and ~10^7 samples; a Python object per series (a dict and two
    polars slices) and per sample while parsing made the import's windows small and most of its CPU. A compact
    matrix answer is read straight from its bytes (:func:`scan_matrix`); anything else is parsed whole and
    converted (the same columns)."""

    labels: Sequence[Mapping[str, str]]
    samples: pl.DataFrame  # sid: Int64, t: Float64, value: Float64

    def __len__(self) -> int:
        return len(self.labels)

    def series(self) -> list[Series]:
        """One :class:`Series` per series (small answers: the per-node interval probes, tests)."""
        sid = self.samples["sid"]
        bounds = sid.search_sorted(pl.int_range(len(self.labels) + 1, eager=True, dtype=pl.Int64)).to_list()
        t, v = self.samples["t"], self.samples["value"]
        return [
            Series(lab, t.slice(a, b - a), v.slice(a, b - a))
            for lab, a, b in zip(self.labels, bounds[:-1], bounds[1:], strict=True)
        ]

    def last_values(self) -> list[float]:
        """Each series' newest value (an instant query's one sample)."""
        last = self.samples.group_by("sid").agg(pl.col("value").last())
        by = dict(zip(last["sid"].to_list(), last["value"].to_list(), strict=True))
        return [by.get(i, float("nan")) for i in range(len(self.labels))]

    def with_labels(self, labels: Sequence[Mapping[str, str]]) -> Block:
        return Block(labels, self.samples)


_SAMPLES = {"sid": pl.Int64, "t": pl.Float64, "value": pl.Float64}


def _block(labels: Sequence[Mapping[str, str]], pairs: Sequence[Sequence[Sequence[Any]]]) -> Block:
    """A Block from parsed ``[time, "value"]`` pairs (an answer not in the compact matrix shape)."""
    series = _columns(labels, pairs)
    lengths = pl.Series([len(s) for s in series], dtype=pl.Int64)
    sid = pl.int_range(len(series), eager=True, dtype=pl.Int64).repeat_by(lengths).explode()
    samples = pl.DataFrame(
        {
            "sid": sid if len(sid) and series else pl.Series([], dtype=pl.Int64),
            "t": pl.concat([s.times for s in series]) if series else pl.Series([], dtype=pl.Float64),
            "value": pl.concat([s.values for s in series]) if series else pl.Series([], dtype=pl.Float64),
        }
    ).drop_nulls("sid")
    return Block(list(labels), samples.cast(_SAMPLES))  # type: ignore[arg-type]


_RESULT = b'"result":['
_ITEM = b'{"metric":'
_VALUES = b'},"values":['
SCAN_CHUNK = 8 << 20
"""Bytes of sample text turned into columns at a time (the copies a chunk makes are transient)."""


def scan_matrix(body: bytes) -> tuple[Any, Block] | None:
    """(the answer's envelope with an empty result, the result as a :class:`Block`) read straight from the
    bytes of a compact ``matrix`` answer — ``{"metric":{…},"values":[[t,"v"],…]}`` items as Prometheus,
    Thanos and VictoriaMetrics write them — without a Python object per sample: each item's labels are parsed
    alone, its samples' text gathered and read as CSV (``t,v`` lines) in C. ``None`` when the body is not in
    that shape or a sample is not a number: the caller then parses it whole (and names what is wrong).

    The markers cannot occur inside a label value: there a ``"`` is always escaped."""
    start = body.find(_RESULT)
    if start < 0:
        return None
    pos = start + len(_RESULT)
    labels: list[Mapping[str, str]] = []
    counts: list[int] = []
    pieces: list[bytes] = []
    frames: list[pl.DataFrame] = []
    size = 0
    try:
        if body[pos : pos + 1] == b"]":
            end = pos
        else:
            while True:
                if not body.startswith(_ITEM, pos):
                    return None
                at = body.find(_VALUES, pos)
                if at < 0:
                    return None
                metric = orjson.loads(body[pos + len(_ITEM) : at + 1])
                if not isinstance(metric, dict):
                    return None
                first = at + len(_VALUES)
                last = body.find(b"]]}", first)
                if last < 0 or body[first : first + 1] != b"[":
                    return None
                span = body[first + 1 : last]
                labels.append(metric)
                counts.append(span.count(b"],[") + 1)
                pieces.append(span)
                size += len(span)
                if size >= SCAN_CHUNK:
                    frames.append(_csv(pieces))
                    pieces, size = [], 0
                pos = last + 3
                sep = body[pos : pos + 1]
                if sep == b",":
                    pos += 1
                    continue
                if sep != b"]":
                    return None
                end = pos
                break
        if pieces:
            frames.append(_csv(pieces))
        envelope = orjson.loads(body[: start + len(_RESULT)] + body[end:])
    except (orjson.JSONDecodeError, pl.exceptions.PolarsError, ValueError):
        return None
    if not all(isinstance(v, str) for lab in labels for v in lab.values()):
        return None
    rows = pl.concat(frames) if frames else pl.DataFrame(schema={"t": pl.Float64, "raw": pl.String})
    if rows.height != sum(counts):
        return None
    values = rows["raw"].cast(pl.Float64, strict=False)
    if values.null_count():  # not a number: the whole parse names it
        return None
    sid = pl.int_range(len(counts), eager=True, dtype=pl.Int64).repeat_by(pl.Series(counts, dtype=pl.Int64))
    samples = pl.DataFrame({"sid": sid.explode() if counts else sid, "t": rows["t"], "value": values})
    return envelope, Block(labels, samples.cast(_SAMPLES))  # type: ignore[arg-type]


def _csv(pieces: list[bytes]) -> pl.DataFrame:
    """``t,"v"],[t,"v"`` spans → a frame of ``t`` and the value's text (``NaN``, ``+Inf`` kept as text)."""
    text = b"\n".join(pieces).replace(b"],[", b"\n").translate(None, b'"')
    return pl.read_csv(
        text,
        has_header=False,
        new_columns=["t", "raw"],
        schema={"t": pl.Float64, "raw": pl.String},
        quote_char=None,
    )


@dataclass
class ClientOptions:
    """How to reach the server; never stored in a recording (credentials)."""

    url: str
    bearer_token: str | None = None
    basic_auth: tuple[str, str] | None = None
    client_cert: tuple[str, str] | None = None  # (certificate file, key file)
    ca_file: str | None = None
    insecure: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 0.5  # seconds before the first retry, doubled each time (with jitter)
    concurrency: int = 4
    tls_server_name: str | None = None  # SNI and the name the certificate must hold (a port-forward)
    params: Mapping[str, str] = field(default_factory=dict)  # sent with every query (Thanos: dedup, …)


class PrometheusClient:
    """Range and instant queries with retries, splitting and bounded concurrency (a thread pool)."""

    def __init__(self, options: ClientOptions, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.options = options
        self._sleep = sleep
        base = options.url.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise InputError(f"expected an http:// or https:// URL, got {options.url!r}", source="--prometheus")
        self.base = base
        headers = dict(options.headers)
        if options.bearer_token:
            headers["Authorization"] = f"Bearer {options.bearer_token}"
        try:
            tls = _tls_context(options)
        except (OSError, ssl.SSLError) as exc:  # unreadable CA bundle or client certificate
            raise InputError(
                f"cannot set up TLS ({' '.join(str(exc).split())})", source="--ca-file/--client-cert"
            ) from None
        self._http = httpx2.Client(
            headers=headers,
            auth=options.basic_auth,
            verify=tls,
            timeout=options.timeout,
            limits=httpx2.Limits(max_connections=max(1, options.concurrency)),
        )
        self._pool = _DaemonPool(max(1, options.concurrency))
        self._lock = threading.Lock()
        self.requests = 0
        self.points = 0
        self.warnings: list[str] = []  # the API's "warnings" (Thanos: a store that did not answer)
        self._extensions = {"sni_hostname": options.tls_server_name} if options.tls_server_name else None

    def close(self) -> None:
        self._pool.shutdown()
        self._http.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, exc_type: object, *_exc: object) -> None:
        if exc_type is None:
            self.close()
        else:  # closing the connection pool would wait for a request still in flight (Ctrl-C)
            self._pool.shutdown()

    # -- queries --------------------------------------------------------------------------
    def query_range(self, query: str, start: float, end: float, step: float) -> list[Series]:
        """Every series of ``query`` evaluated at start, start + step, … ≤ end (seconds)."""
        return self.query_many({"q": (query, start, end, step)})["q"]

    def submit(
        self,
        ranges: Mapping[str, tuple[str, float, float, float]],
        instants: Mapping[str, tuple[str, float]] | None = None,
    ) -> Pending:
        """Start range queries (name → (query, start, end, step)) and instant queries (name → (query,
        time)) on the pool; :meth:`collect` waits for them. A range is split into consecutive
        sub-ranges of at most MAX_POINTS steps, stitched back per series (its whole label set)."""
        return self._submit_with(self._range_once, self.query, ranges, instants)

    def submit_blocks(
        self,
        ranges: Mapping[str, tuple[str, float, float, float]],
        instants: Mapping[str, tuple[str, float]] | None = None,
    ) -> Pending:
        """:meth:`submit`, each answer as one :class:`Block` (:meth:`collect_blocks` waits for them)."""
        return self._submit_with(self._range_block, self._instant_block, ranges, instants)

    def _submit_with(
        self,
        range_fn: Callable[[str, float, float, float], Any],
        instant_fn: Callable[[str, float], Any],
        ranges: Mapping[str, tuple[str, float, float, float]],
        instants: Mapping[str, tuple[str, float]] | None,
    ) -> Pending:
        pending: Pending = {
            name: [self._pool.submit(range_fn, q, a, b, step) for a, b in split_range(start, end, step)]
            for name, (q, start, end, step) in ranges.items()
        }
        for name, (q, at) in (instants or {}).items():
            pending[name] = [self._pool.submit(instant_fn, q, at)]
        return pending

    def collect_blocks(self, pending: Pending) -> dict[str, Block]:
        return {name: _merge_blocks([_result(f) for f in futs]) for name, futs in pending.items()}

    def collect(self, pending: Pending) -> dict[str, list[Series]]:
        out: dict[str, list[Series]] = {}
        for name, futs in pending.items():
            if len(futs) == 1:
                out[name] = _result(futs[0])
                continue
            merged: dict[tuple[tuple[str, str], ...], list[Series]] = {}
            for fut in futs:
                for s in _result(fut):
                    merged.setdefault(tuple(sorted(s.labels.items())), []).append(s)
            out[name] = [
                parts[0]
                if len(parts) == 1
                else Series(parts[0].labels, pl.concat([p.times for p in parts]), pl.concat([p.values for p in parts]))
                for parts in merged.values()
            ]
        return out

    def query_many(self, queries: Mapping[str, tuple[str, float, float, float]]) -> dict[str, list[Series]]:
        """Several range queries at once (name → (query, start, end, step)), bounded by the pool."""
        return self.collect(self.submit(queries))

    def query(self, query: str, at: float) -> list[Series]:
        """An instant query at ``at`` (seconds); each series has one sample."""
        data = self._call("query", {"query": query, "time": _fmt(at)}, query)
        series: list[Series] = _parse(data, query)
        return series

    def _range_once(self, query: str, start: float, end: float, step: float) -> list[Series]:
        params = {"query": query, "start": _fmt(start), "end": _fmt(end), "step": _fmt(step)}
        series: list[Series] = _parse(self._call("query_range", params, query), query)
        return series

    def _range_block(self, query: str, start: float, end: float, step: float) -> Block:
        params = {"query": query, "start": _fmt(start), "end": _fmt(end), "step": _fmt(step)}
        data = self._call("query_range", params, query, scan=True)
        return data if isinstance(data, Block) else _parse_block(data, query)

    def _instant_block(self, query: str, at: float) -> Block:
        return _parse_block(self._call("query", {"query": query, "time": _fmt(at)}, query), query)

    def _call(self, endpoint: str, params: Mapping[str, str], query: str, *, scan: bool = False) -> Any:
        """POST a query (long PromQL does not fit a URL), retrying 429/5xx and dropped connections. With
        ``scan``, a compact matrix answer comes back as a :class:`Block` read from its bytes."""
        url = f"{self.base}/api/v1/{endpoint}"
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._post(url, {**self.options.params, **params}, query)
            except httpx2.TimeoutException:
                problem = f"timed out after {self.options.timeout:g}s"
                retry = True
            except httpx2.TransportError as exc:
                problem = f"cannot reach {self.base} ({_short(exc)}){self._tls_hint(exc)}"
                retry = not isinstance(exc, httpx2.ConnectError) or attempt == 1  # refused: one more try
                if problem.endswith("use https://"):
                    retry = False
            else:
                with self._lock:
                    self.requests += 1
                status = resp.status_code
                first = _first_line(resp)
                if status == 400 and "HTTP request to an HTTPS server" in first:  # Go's net/http on a TLS port
                    raise PrometheusError(f"{self.base} serves HTTPS ({first!r}): use https://", source=_q(query))
                if status in (401, 403):
                    raise PrometheusError(self._refused(status, first), source=_q(query))
                if status in RETRY_STATUSES:
                    problem, retry = f"HTTP {status} from {self.base}{_server_error(resp)}", True
                else:
                    scanned = scan_matrix(resp.content) if scan and status == 200 else None
                    if scanned is not None:
                        envelope, block = scanned
                        ok = isinstance(envelope, dict) and envelope.get("status") == "success"
                        data = envelope.get("data") if ok else None
                        if isinstance(data, dict) and data.get("resultType") == "matrix":
                            self._warn(envelope.get("warnings"))
                            return block
                    del scanned
                    body = _json(resp)
                    if status == 200 and isinstance(body, dict) and body.get("status") == "success":
                        self._warn(body.get("warnings"))
                        return body.get("data")
                    if isinstance(body, dict) and body.get("status") == "error":
                        error = str(body.get("error", ""))
                        raise PrometheusError(
                            f"{body.get('errorType', 'error')}: {error} (HTTP {status})".strip(),
                            source=_q(query),
                            hint="lower --window (the server's --query.max-samples bounds one query)"
                            if "too many samples" in error
                            else None,
                        )
                    said = f": {first!r}" if first and status >= 400 else ""
                    raise PrometheusError(
                        f"HTTP {status} from {self.base}{said}; not a Prometheus API response "
                        f"({resp.headers.get('content-type', 'no content type')}); is {self.base} the server's "
                        "base URL (e.g. http://prometheus:9090, or Thanos/Mimir's /prometheus prefix)?",
                        source=_q(query),
                    )
            if not retry or attempt > self.options.retries:
                tries = f" (after {attempt} attempts)" if attempt > 1 else ""
                raise PrometheusError(f"{problem}{tries}", source=_q(query))
            delay = self.options.backoff * (2 ** (attempt - 1))
            self._sleep(delay * (0.5 + random.random() / 2))

    def _post(self, url: str, data: Mapping[str, str], query: str) -> httpx2.Response:
        """The answer read up to :data:`MAX_BODY_BYTES`: a server (or a proxy in front of it) sending without end
        must not take the import's memory with it (1.5 GB of body cost 3.4 GB)."""
        with self._http.stream("POST", url, data=data, extensions=self._extensions) as resp:
            body = bytearray()
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise PrometheusError(
                        f"the answer from {self.base} is larger than {MAX_BODY_BYTES >> 20} MiB",
                        source=_q(query),
                        hint="lower --window or --memory-budget (each query then asks for less)",
                    )
            # the body is decoded already (iter_bytes): the encoding headers no longer describe it
            headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in _ENCODING_HEADERS]
            return httpx2.Response(resp.status_code, headers=headers, content=bytes(body), request=resp.request)

    def _tls_hint(self, exc: BaseException) -> str:
        """A plain-HTTP request to a TLS port: the server answers with a TLS alert (not HTTP) or hangs up."""
        if self.base.startswith("http://") and isinstance(exc, (httpx2.RemoteProtocolError, httpx2.ReadError)):
            text = str(exc).lower()
            if "\\x15\\x03" in text or "illegal" in text or "invalid" in text or "reset" in text:
                return "; if the port serves TLS, use https://"
        return ""

    def _refused(self, status: int, first: str) -> str:
        """401/403 with what the server said; a Mimir/Cortex tenant problem named as such."""
        why = "unauthorized" if status == 401 else "forbidden"
        said = f": {first!r}" if first else ""
        tenant = next((v for k, v in self.options.headers.items() if k.lower() == "x-scope-orgid"), None)
        low = first.lower()
        if "org id" in low or "tenant" in low or "orgid" in low:
            fix = (
                f"check the tenant {tenant!r} (--header 'X-Scope-OrgID: …')"
                if tenant
                else "the server wants a tenant: pass --header 'X-Scope-OrgID: TENANT'"
            )
        else:
            fix = "check --bearer-token-file / --basic-auth / --client-cert / --header"
        return f"HTTP {status} {why} from {self.base}{said}; {fix}"

    def _warn(self, warnings: Any) -> None:
        if isinstance(warnings, list) and warnings:
            with self._lock:
                for w in warnings:
                    text = " ".join(str(w).split())[:300]
                    if text not in self.warnings:
                        self.warnings.append(text)


def _tls_context(options: ClientOptions) -> ssl.SSLContext:
    """The system's trust (or ``--ca-file``), the client certificate if any, or no verification."""
    ctx = ssl.create_default_context(cafile=options.ca_file) if options.ca_file else ssl.create_default_context()
    if options.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if options.client_cert:
        ctx.load_cert_chain(*options.client_cert)
    return ctx


def _result(fut: Future[Any]) -> Any:
    """``fut.result()`` in short waits: a signal the kernel delivered to a worker thread (Ctrl-C)
    only runs its handler when the main thread wakes, which a wait without a timeout never does."""
    while True:
        try:
            return fut.result(timeout=0.2)
        except TimeoutError:
            continue


class _DaemonPool:
    """A bounded pool of daemon threads: unlike ThreadPoolExecutor (joined at interpreter exit), a
    request stuck on a slow server cannot hold back the exit after Ctrl-C."""

    def __init__(self, workers: int) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._threads = [threading.Thread(target=self._work, daemon=True, name=f"promql-{i}") for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        self._jobs.put((fut, fn, args))
        return fut

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, fn, args = job
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:
                fut.set_exception(exc)
            del job, fut, args  # an idle worker must not keep its last answer alive (a window's worth each)

    def shutdown(self) -> None:
        """Cancel what has not started; the daemon threads end with their current request."""
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        for _ in self._threads:
            self._jobs.put(None)


def split_range(start: float, end: float, step: float, max_points: int = MAX_POINTS) -> list[tuple[float, float]]:
    """Consecutive [a, b] sub-ranges on the same step grid, each at most ``max_points`` points."""
    if end < start:
        return []
    total = round((end - start) / step) + 1
    spans = []
    first = 0
    while first < total:
        last = min(total, first + max_points) - 1
        spans.append((start + first * step, start + last * step))
        first = last + 1
    return spans


def _fmt(seconds: float) -> str:
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _q(query: str) -> str:
    text = " ".join(query.split())
    return f"query {text[:160]}{'…' if len(text) > 160 else ''}"


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _json(resp: httpx2.Response) -> Any:
    try:
        return orjson.loads(resp.content)
    except orjson.JSONDecodeError:
        return None


def _server_error(resp: httpx2.Response) -> str:
    body = _json(resp)
    if isinstance(body, dict) and body.get("error"):
        return f": {' '.join(str(body['error']).split())[:200]}"
    first = _first_line(resp)
    return f": {first!r}" if first else ""


def _first_line(resp: httpx2.Response) -> str:
    """The first non-blank line of a body that is not JSON (a proxy's or gateway's error page), ≤ 200 chars."""
    if _json(resp) is not None:
        return ""
    text = resp.content[:4096].decode("utf-8", "replace")
    if "<" in text:  # an HTML error page: its text, not its markup
        text = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", "\n", text)
        text = re.sub(r"<[^>]*>", "\n", text)
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line[:200]
    return ""


def _merge_blocks(blocks: Sequence[Block]) -> Block:
    """Sub-range answers of one query stitched per series (its whole label set), in order of appearance."""
    if len(blocks) == 1:
        return blocks[0]
    ids: dict[tuple[tuple[str, str], ...], int] = {}
    labels: list[Mapping[str, str]] = []
    parts = []
    for block in blocks:
        remap = []
        for lab in block.labels:
            key = tuple(sorted(lab.items()))
            if key not in ids:
                ids[key] = len(labels)
                labels.append(lab)
            remap.append(ids[key])
        new = pl.Series(remap, dtype=pl.Int64)
        parts.append(block.samples.with_columns(pl.lit(new).gather(pl.col("sid")).alias("sid")))
    samples = pl.concat(parts).sort("sid", maintain_order=True)
    return Block(labels, samples)


def _parse_block(data: Any, query: str) -> Block:
    """An answer parsed whole (a vector, or a matrix not in the compact shape) as a :class:`Block`."""
    block: Block = _parse(data, query, _block)
    return block


def _parse(data: Any, query: str, build: Callable[[Any, Any], Any] = _columns) -> Any:
    if not isinstance(data, dict):
        raise PrometheusError("response has no data", source=_q(query))
    kind, result = data.get("resultType"), data.get("result")
    if not isinstance(result, list):
        raise PrometheusError("response has no result list", source=_q(query))
    if kind not in ("matrix", "vector"):
        raise PrometheusError(f"unexpected result type {kind!r}", source=_q(query))
    if not all(isinstance(item, dict) and isinstance(item.get("metric", {}), dict) for item in result):
        raise PrometheusError("a result item is not an object with a metric (not the Prometheus API)", source=_q(query))
    try:
        labels = [item.get("metric") or {} for item in result]
        pairs = [item.get("values") or [] for item in result] if kind == "matrix" else [[i["value"]] for i in result]
        return build(labels, pairs)
    except (KeyError, IndexError, TypeError, ValueError, pl.exceptions.PolarsError) as exc:
        why = " ".join(str(exc).split())[:200]
        raise PrometheusError(
            f'a sample is not [time, "value"] as the Prometheus API writes it ({why})', source=_q(query)
        ) from None
