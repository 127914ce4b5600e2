"""The stand-in Prometheus of the import benchmark answers as the real server does (issue 26 item 6).

The 100-node × 24 h figures come from :mod:`prom_standin`, so it must be the real server's double: the
benchmark model at a small scale is backfilled into a real Prometheus, an import records every query it
sends and every answer, and the stand-in must give the same answers (series, labels, sample times, values)
and, imported through HTTP, the same recording.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from prom_bench_model import T0, write_chunk
from prom_standin import Model, answer, serve
from prom_support import MISSING, PROMETHEUS, PROMTOOL, backfill, prometheus

from recordings.prometheus import client as client_module
from recordings.prometheus.build import PrometheusImport, import_prometheus
from recordings.prometheus.client import ClientOptions
from recordings.reader import open_recording

NODES, PODS, HOURS = 2, 3, 2
pytestmark = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)


@dataclass
class Real:
    url: str
    calls: list[dict[str, Any]]  # endpoint, params, data of every query of the imports below
    recordings: dict[str, Path]


def _import(url: str, out: Path, start: float, end: float, window: float) -> None:
    spec = PrometheusImport(client=ClientOptions(url=url), start=start, end=end, window=window)
    import_prometheus(spec, out)


RANGES = {  # from the data's first sample (several windows), and to its last (the measure's subquery)
    "head": (T0, T0 + 1800 - 10, 600.0),
    "tail": (T0 + 3000, T0 + HOURS * 3600 - 10, 1800.0),
}


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Real]:
    base = tmp_path_factory.mktemp("prom-standin")
    om = base / "model.om"
    write_chunk(om, 0, HOURS * 360, NODES, PODS)
    backfill(om, base / "data")
    calls: list[dict[str, Any]] = []
    original = client_module.PrometheusClient._call
    lock = threading.Lock()

    def recording_call(
        self: client_module.PrometheusClient, endpoint: str, params: Any, query: str, *, scan: bool = False
    ) -> Any:
        data = original(self, endpoint, params, query)  # parsed whole, to keep
        with lock:
            calls.append({"endpoint": endpoint, "params": dict(params), "data": data})
        return client_module._parse_block(data, query) if scan else data

    recordings = {}
    with prometheus(base / "data") as srv, pytest.MonkeyPatch.context() as mp:
        mp.setattr(client_module.PrometheusClient, "_call", recording_call)
        for name, (start, end, window) in RANGES.items():
            recordings[name] = base / f"rec-{name}"
            _import(srv.url, recordings[name], start, end, window)
        yield Real(srv.url, calls, recordings)


def _normal(data: dict[str, Any]) -> tuple[str, list[tuple[Any, ...]]]:
    out = []
    for item in data["result"]:
        samples = item.get("values") or [item["value"]]
        out.append((tuple(sorted(item["metric"].items())), tuple((float(t), v) for t, v in samples)))
    return data["resultType"], sorted(out)


def test_every_answer_of_an_import_equals_the_real_servers(real: Real) -> None:
    model = Model(NODES, PODS, HOURS)
    assert len(real.calls) > 100
    kinds = {c["params"]["query"].split("(")[0] for c in real.calls}
    assert {"max by ", "max_over_time", "last_over_time", "topk", "count"} <= kinds  # the subquery was asked
    for call in real.calls:
        query = call["params"]["query"]
        status, body = answer(model, f"/api/v1/{call['endpoint']}", {k: [str(v)] for k, v in call["params"].items()})
        assert status == 200, (query, body[:300])
        got, want = _normal(orjson.loads(body)["data"]), _normal(call["data"])
        if query.startswith("topk("):  # which of equal values comes first is the server's choice
            assert (got[0], len(got[1])) == (want[0], len(want[1])), query
        else:
            assert got == want, query


def test_an_import_from_the_standin_is_the_same_recording(real: Real, tmp_path: Path) -> None:
    server = serve(Model(NODES, PODS, HOURS))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        for name, (start, end, window) in RANGES.items():
            out = tmp_path / name
            _import(f"http://127.0.0.1:{server.server_address[1]}", out, start, end, window)
            mine, theirs = open_recording(out), open_recording(real.recordings[name])
            for table in ("ticks", "node_stats", "pod_stats", "container_stats", "objects"):
                a, b = (r.scan(table).collect() for r in (mine, theirs))
                a, b = (t.sort(pl.all(), nulls_last=True) for t in (a, b))
                assert a.height and a.equals(b), (name, table)
            assert mine.manifest.notes == theirs.manifest.notes
    finally:
        server.shutdown()
        server.server_close()


def test_a_query_outside_the_subset_is_bad_data() -> None:
    status, body = answer(Model(1, 1, 1), "/api/v1/query", {"query": ["rate(x[5m])"], "time": [str(T0)]})
    assert status == 400 and orjson.loads(body)["errorType"] == "bad_data"
