"""A stand-in Prometheus for the import benchmark: the HTTP API's ``/api/v1/query`` and ``/api/v1/query_range``
answered from :mod:`prom_bench_model` (by hand and tests, not a product part).

Why: backfilling a real Prometheus with 100 nodes × 110 pods × 24 h (about 2 billion samples) and letting it
answer a day of range queries does not fit this box (README, Record and import). The importer's own memory and
time at that scale are what the benchmark measures, so this server computes the answers from the model the real
server is backfilled with, in the real server's shape: the same series and labels (empty values absent), the
same values and sample times, Prometheus 2.x evaluation (5 min lookback; ``[d]`` ranges closed at both ends;
subquery steps on multiples of their resolution), the same JSON. It knows the PromQL the importer sends and no
more: selectors (``=``, ``!=``, ``=~``, ``!~``), ``max``/``sum``/``count``/``topk`` with ``by``, ``timestamp``,
``last_over_time``, ``max_over_time`` of a subquery, ``- `` between vectors, ``== N``, ``and on (…)``; anything
else is a 400 ``bad_data``. ``test_prom_standin.py`` checks every answer of an import against the real server.

    .venv/bin/python tests/recordings/prometheus/prom_standin.py --nodes 100 --pods 110 --hours 24 --port 9099
"""

from __future__ import annotations

import argparse
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import polars as pl
from prom_bench_model import GI, KSM_EVERY, MI, T0, TICK, families

LOOKBACK = 300.0  # Prometheus' default --query.lookback-delta


# -- the model as frames ----------------------------------------------------------------------------
class Model:
    """Per family one frame of series: its label columns (null: absent), n, p, c, kind."""

    def __init__(self, nodes: int, pods: int, hours: float) -> None:
        self.ticks = int(hours * 3600 / TICK)  # data at ticks [0, ticks)
        self.frames: dict[str, pl.DataFrame] = {}
        for fam, series in families(nodes, pods).items():
            names = sorted({k for labels, *_ in series for k in labels})
            cols: dict[str, list[Any]] = {k: [labels.get(k) or None for labels, *_ in series] for k in names}
            numbers = ("n", "p", "ctr", "kind")
            for i, key in enumerate(numbers):
                cols[key] = [s[i + 1] for s in series]
            self.frames[fam] = pl.DataFrame(
                cols, schema={**dict.fromkeys(names, pl.String), **dict.fromkeys(numbers, pl.Int64)}
            )
        self._select_cache: dict[tuple[str, tuple[tuple[str, str, str], ...]], pl.DataFrame] = {}
        self._lock = threading.Lock()

    def select(self, metric: str, matchers: tuple[tuple[str, str, str], ...]) -> pl.DataFrame:
        key = (metric, matchers)
        with self._lock:
            hit = self._select_cache.get(key)
        if hit is not None:
            return hit
        frame = self.frames.get(metric)
        if frame is None:
            out = pl.DataFrame(schema={"__name__": pl.String, **dict.fromkeys(("n", "p", "ctr", "kind"), pl.Int64)})
        else:
            out = frame.with_columns(pl.lit(metric).alias("__name__"))
            for name, op, text in matchers:
                col = pl.col(name).fill_null("") if name in out.columns else pl.lit("")
                if op == "=":
                    cond = col == text
                elif op == "!=":
                    cond = col != text
                else:
                    cond = col.str.contains(f"^(?:{text})$")
                    cond = ~cond if op == "!~" else cond
                out = out.filter(cond)
        with self._lock:
            self._select_cache[key] = out
        return out


def _value_expr() -> pl.Expr:
    """:func:`prom_bench_model.value` over columns kind, p, ctr, tick."""
    wave = (pl.col("tick") * 7) % 360
    kind, p, c = pl.col("kind"), pl.col("p"), pl.col("ctr")
    return (
        pl.when(kind == 1)
        .then(6 * GI + wave * MI)
        .when(kind == 2)
        .then(32 * GI)
        .when(kind == 3)
        .then(120 * GI - wave * MI)
        .when(kind == 4)
        .then(200 * GI)
        .when(kind == 5)
        .then(5_000_000)
        .when(kind == 6)
        .then(6_000_000)
        .when(kind == 7)
        .then(4_194_304)
        .when(kind == 8)
        .then(900 + wave)
        .when(kind == 10)
        .then((40 + p) * MI + wave * 4096)
        .when(kind == 11)
        .then((20 + p + c) * MI + wave * 2048)
        .when(kind == 12)
        .then((5 + c) * MI)
        .when(kind == 13)
        .then((1 + p) * MI)
        .when(kind == 31)
        .then(32 * GI)
        .when(kind == 34)
        .then(64 * MI)
        .when(kind.is_in([30, 32]))
        .then(1)
        .otherwise(0)
        .cast(pl.Float64)
    )


# -- PromQL (the subset the importer sends) ---------------------------------------------------------
_TOKEN = re.compile(
    r'\s*(?:(?P<num>\d+(?:\.\d+)?(?:ms|s|m|h|d)?)|(?P<str>"(?:[^"\\]|\\.)*")|(?P<op>==|!=|=~|!~|[-=(){}\[\],:])'
    r"|(?P<id>[A-Za-z_:][A-Za-z0-9_:]*))"
)


class Bad(Exception):
    """Not in the subset: answered 400 bad_data."""


@dataclass
class Node:
    kind: str  # sel, agg, func, sub, binop, cmp, and, num
    args: tuple[Any, ...]


def _duration(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text)
    if not m:
        raise Bad(f"bad duration {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise Bad(f"cannot parse at {text[pos : pos + 20]!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self, value: str | None = None) -> str:
        kind, text = self.peek()
        if kind == "end" or (value is not None and text != value):
            raise Bad(f"expected {value!r}, got {text!r}")
        self.i += 1
        return text

    def parse(self) -> Node:
        node = self.expr()
        if self.peek()[0] != "end":
            raise Bad(f"unexpected {self.peek()[1]!r}")
        return node

    def expr(self) -> Node:
        left = self.cmp()
        while self.peek() == ("id", "and"):
            self.take()
            self.take("on")
            on = self.labels()
            left = Node("and", (left, self.cmp(), on))
        return left

    def cmp(self) -> Node:
        left = self.sub()
        if self.peek()[1] == "==":
            self.take()
            left = Node("cmp", (left, float(self.take())))
        return left

    def sub(self) -> Node:
        left = self.postfix()
        while self.peek()[1] == "-":
            self.take()
            left = Node("binop", (left, self.postfix()))
        return left

    def labels(self) -> tuple[str, ...]:
        self.take("(")
        out = []
        while self.peek()[1] != ")":
            out.append(self.take())
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        return tuple(out)

    def postfix(self) -> Node:
        node = self.primary()
        if self.peek()[1] == "[":
            self.take()
            rng = _duration(self.take())
            if self.peek()[1] == ":":
                self.take()
                node = Node("sub", (node, rng, _duration(self.take())))
            else:
                if node.kind != "sel":
                    raise Bad("a range of a non-selector")
                node = Node("range", (node, rng))
            self.take("]")
        return node

    def primary(self) -> Node:
        kind, text = self.peek()
        if text == "(":
            self.take()
            node = self.expr()
            self.take(")")
            return node
        if kind == "num":
            self.take()
            return Node("num", (float(text),))
        if kind != "id":
            raise Bad(f"unexpected {text!r}")
        self.take()
        if text in ("max", "sum", "count", "topk"):
            by = self.labels() if self.peek() == ("id", "by") and self.take() else None
            self.take("(")
            param = None
            if text == "topk":
                param = float(self.take())
                self.take(",")
            inner = self.expr()
            self.take(")")
            if by is None and self.peek() == ("id", "by"):
                self.take()
                by = self.labels()
            return Node("agg", (text, by, param, inner))
        if text in ("timestamp", "last_over_time", "max_over_time"):
            self.take("(")
            inner = self.expr()
            self.take(")")
            return Node("func", (text, inner))
        matchers: list[tuple[str, str, str]] = []
        if self.peek()[1] == "{":
            self.take()
            while self.peek()[1] != "}":
                name, op, value = self.take(), self.take(), self.take()
                if op not in ("=", "!=", "=~", "!~") or not value.startswith('"'):
                    raise Bad(f"bad matcher {name}{op}{value}")
                matchers.append((name, op, _unquote(value)))
                if self.peek()[1] == ",":
                    self.take()
            self.take("}")
        return Node("sel", (text, tuple(sorted(matchers))))


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


# -- evaluation: a vector is (labels: sid + label columns, samples: sid, step, v, ts) ---------------
@dataclass
class Vec:
    labels: pl.DataFrame  # sid (UInt32) + one String column per label (null: absent)
    samples: pl.DataFrame  # sid, step (Int64: index into the steps), v (Float64), ts (Float64: sample time)


_SAMPLES = {"sid": pl.UInt32, "step": pl.Int64, "v": pl.Float64, "ts": pl.Float64}


class Evaluator:
    def __init__(self, model: Model) -> None:
        self.model = model

    def run(self, node: Node, steps: Sequence[float]) -> Vec:
        return self._eval(node, pl.Series("t", list(steps), dtype=pl.Float64))

    def _eval(self, node: Node, steps: pl.Series) -> Vec:
        if node.kind == "sel":
            return self._select(node, steps, LOOKBACK, keep_name=True)
        if node.kind == "func":
            name, inner = node.args
            if name == "last_over_time" and inner.kind == "range":
                return self._select(inner.args[0], steps, inner.args[1], keep_name=True, closed=True)
            if name == "timestamp" and inner.kind == "sel":
                vec = self._select(inner, steps, LOOKBACK, keep_name=False)
                return Vec(vec.labels, vec.samples.with_columns(pl.col("ts").alias("v")))
            if name == "max_over_time" and inner.kind == "sub":
                return self._max_over_subquery(inner, steps)
            raise Bad(f"{name} of {inner.kind}")
        if node.kind == "agg":
            return self._aggregate(node, steps)
        if node.kind == "cmp":
            vec = self._eval(node.args[0], steps)
            return Vec(vec.labels, vec.samples.filter(pl.col("v") == node.args[1]))
        if node.kind == "binop":
            return self._minus(self._eval(node.args[0], steps), self._eval(node.args[1], steps))
        if node.kind == "and":
            return self._and(self._eval(node.args[0], steps), self._eval(node.args[1], steps), node.args[2])
        raise Bad(f"{node.kind} at the top")

    def _select(self, sel: Node, steps: pl.Series, lookback: float, *, keep_name: bool, closed: bool = True) -> Vec:
        metric, matchers = sel.args
        frame = self.model.select(metric, matchers)
        labels = frame.drop("n", "p", "ctr", "kind").with_row_index("sid")
        if not keep_name:
            labels = labels.drop("__name__")
        iv = KSM_EVERY if metric.startswith("kube_") else 1
        last = ((self.model.ticks - 1) // iv) * iv  # the last tick scraped
        grid = pl.DataFrame({"t": steps}).with_row_index("step").with_columns(pl.col("step").cast(pl.Int64))
        # the newest sample at or before t: tick ⌊(t - T0) / (iv·TICK)⌋·iv, at most the last one
        grid = grid.with_columns(
            pl.min_horizontal(((pl.col("t") - T0) / (iv * TICK)).floor() * iv, pl.lit(float(last))).alias("tick")
        )
        grid = grid.with_columns((T0 + pl.col("tick") * TICK).alias("ts"))
        grid = grid.filter((pl.col("tick") >= 0) & (pl.col("t") >= T0) & (pl.col("ts") >= pl.col("t") - lookback))
        grid = grid.with_columns(pl.col("tick").cast(pl.Int64))
        samples = (
            frame.select("p", "ctr", "kind")
            .with_row_index("sid")
            .join(grid.select("step", "tick", "ts"), how="cross")
            .select("sid", "step", _value_expr().alias("v"), "ts")
        )
        return Vec(labels, samples.cast(_SAMPLES))  # type: ignore[arg-type]

    def _max_over_subquery(self, sub: Node, steps: pl.Series) -> Vec:
        inner, rng, res = sub.args
        outer = steps.to_list()
        first = min(outer) - rng
        k0 = int(-(-first // res))  # subquery steps: multiples of res within [t - range, t]
        sub_steps = [k * res for k in range(k0, int(max(outer) // res) + 1)]
        vec = self._eval(inner, pl.Series("t", sub_steps, dtype=pl.Float64))
        at = pl.DataFrame(
            {"sub": list(range(len(sub_steps))), "st": sub_steps}, schema={"sub": pl.Int64, "st": pl.Float64}
        )
        joined = (
            vec.samples.rename({"step": "sub"})
            .join(at, on="sub")
            .join(
                pl.DataFrame({"step": list(range(len(outer))), "t": outer}, schema={"step": pl.Int64, "t": pl.Float64}),
                how="cross",
            )
        )
        joined = joined.filter((pl.col("st") >= pl.col("t") - rng) & (pl.col("st") <= pl.col("t")))
        samples = joined.group_by("sid", "step").agg(pl.col("v").max(), pl.col("t").first().alias("ts"))
        labels = vec.labels.drop("__name__") if "__name__" in vec.labels.columns else vec.labels
        return Vec(labels, samples.cast(_SAMPLES))  # type: ignore[arg-type]

    def _aggregate(self, node: Node, steps: pl.Series) -> Vec:
        op, by, param, inner = node.args
        vec = self._eval(inner, steps)
        if op == "topk":  # instant queries only (detect's sample); ties go either way, as in Prometheus
            ranked = vec.samples.sort("v", descending=True).group_by("step", maintain_order=True).head(int(param))
            return Vec(vec.labels, ranked)
        keys = [k for k in (by or ()) if k in vec.labels.columns]
        if keys:
            groups = vec.labels.select(keys).unique(maintain_order=True).with_row_index("gid")
            sid_gid = vec.labels.join(groups, on=keys, nulls_equal=True).select("sid", "gid")
        else:
            groups = pl.DataFrame({"gid": [0]}, schema={"gid": pl.UInt32})
            sid_gid = vec.labels.select("sid", pl.lit(0, pl.UInt32).alias("gid"))
        agg = {"max": pl.col("v").max(), "sum": pl.col("v").sum(), "count": pl.len().cast(pl.Float64)}[op]
        samples = (
            vec.samples.join(sid_gid, on="sid")
            .group_by("gid", "step")
            .agg(agg.alias("v"), pl.lit(0.0).alias("ts"))
            .rename({"gid": "sid"})
        )
        labels = groups.rename({"gid": "sid"})
        # a label every series of a group lacks is absent (an all-null column is dropped when rendering)
        return Vec(labels, samples.cast(_SAMPLES))  # type: ignore[arg-type]

    def _minus(self, a: Vec, b: Vec) -> Vec:
        """One-to-one on every label but the name; the result has no name."""
        la = a.labels.drop("__name__", strict=False)
        lb = b.labels.drop("__name__", strict=False)
        keys = sorted((set(la.columns) | set(lb.columns)) - {"sid"})
        la = la.with_columns(pl.lit(None, pl.String).alias(k) for k in keys if k not in la.columns)
        lb = lb.with_columns(pl.lit(None, pl.String).alias(k) for k in keys if k not in lb.columns)
        right = lb.rename({"sid": "sid_b"})
        pairs = (la.join(right, on=keys, nulls_equal=True) if keys else la.join(right, how="cross")).select(
            "sid", "sid_b"
        )
        samples = (
            a.samples.join(pairs, on="sid")
            .join(b.samples.rename({"sid": "sid_b", "v": "vb", "ts": "tsb"}), on=["sid_b", "step"])
            .select("sid", "step", (pl.col("v") - pl.col("vb")).alias("v"), "ts")
        )
        return Vec(la.select("sid", *keys), samples)

    def _and(self, a: Vec, b: Vec, on: tuple[str, ...]) -> Vec:
        keys = list(on)
        la = a.labels.with_columns(pl.lit(None, pl.String).alias(k) for k in keys if k not in a.labels.columns)
        lb = b.labels.with_columns(pl.lit(None, pl.String).alias(k) for k in keys if k not in b.labels.columns)
        right = b.samples.join(lb.select("sid", *keys), on="sid").select(*keys, "step").unique()
        keep = a.samples.join(la.select("sid", *keys), on="sid").join(
            right, on=[*keys, "step"], how="semi", nulls_equal=True
        )
        return Vec(a.labels, keep.select(list(_SAMPLES)))


# -- JSON as the HTTP API writes it -----------------------------------------------------------------
def _num(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else f"{t:.3f}".rstrip("0")


def render(vec: Vec, steps: Sequence[float], matrix: bool) -> bytes:
    """``{"status":"success","data":{"resultType":…,"result":[…]}}``: series without samples left out,
    labels with empty values absent, values formatted as Go's FormatFloat(v, 'f', -1) does for whole numbers."""
    times = pl.Series("tt", [_num(t) for t in steps], dtype=pl.String)
    v = pl.col("v")
    text = (
        pl.when(v.is_nan())
        .then(pl.lit("NaN"))
        .when(v.is_infinite())
        .then(pl.when(v > 0).then(pl.lit("+Inf")).otherwise(pl.lit("-Inf")))
        .when(v == v.round())
        .then(v.cast(pl.Int64).cast(pl.String))
        .otherwise(v.cast(pl.String))
    )
    pairs = (
        vec.samples.select("sid", "step", "v")
        .sort("sid", "step")
        .select("sid", pl.format('[{},"{}"]', pl.lit(times).gather(pl.col("step")), text).alias("pair"))
        .group_by("sid", maintain_order=True)
        .agg(pl.col("pair").str.join(","))
    )
    label_cols = [c for c in vec.labels.columns if c != "sid"]
    metrics = {
        row[0]: orjson.dumps(
            {k: val for k, val in zip(label_cols, row[1:], strict=True) if val}, option=orjson.OPT_SORT_KEYS
        )
        for row in vec.labels.iter_rows()
    }
    key = b'"values":[' if matrix else b'"value":'
    close = b"]}" if matrix else b"}"
    items = [b'{"metric":' + metrics[sid] + b"," + key + pair.encode() + close for sid, pair in pairs.iter_rows()]
    kind = b"matrix" if matrix else b"vector"
    return b'{"status":"success","data":{"resultType":"' + kind + b'","result":[' + b",".join(items) + b"]}}"


def answer(model: Model, path: str, form: dict[str, list[str]]) -> tuple[int, bytes]:
    def one(name: str) -> str:
        return form.get(name, [""])[0]

    try:
        node = _Parser(one("query")).parse()
        if path.endswith("/query_range"):
            start, end, step = float(one("start")), float(one("end")), float(one("step"))
            steps = [start + i * step for i in range(round((end - start) / step) + 1)]
            return 200, render(Evaluator(model).run(node, steps), steps, True)
        if path.endswith("/query"):
            at = float(one("time"))
            return 200, render(Evaluator(model).run(node, [at]), [at], False)
        return 404, b"404 page not found\n"
    except (Bad, ValueError) as exc:
        body = {"status": "error", "errorType": "bad_data", "error": f"stand-in: {exc}"}
        return 400, orjson.dumps(body)


def serve(model: Model, port: int = 0) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self, form: dict[str, list[str]]) -> None:
            status, body = answer(model, urlsplit(self.path).path, form)
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if status != 404 else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._reply(parse_qs(self.rfile.read(length).decode(), keep_blank_values=True))

        def do_GET(self) -> None:
            self._reply(parse_qs(urlsplit(self.path).query, keep_blank_values=True))

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--port", type=int, default=9099)
    args = ap.parse_args()
    server = serve(Model(args.nodes, args.pods, args.hours), args.port)
    print(f"serving http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
