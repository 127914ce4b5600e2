"""The columnar parse of query answers gives the same recording as the per-series parse it replaced (issue 26
item 6), table by table.

Why a stored digest: the per-series parse (a Python object per sample, commit 9d95d61) is gone; before it went,
``python tests/recordings/prometheus/test_prom_columns.py --write`` recorded each table's digest of these imports
in ``prom_columns_golden.json`` (bundled scenarios through a real Prometheus — evictions, pods that go, 20 s
scrapes, kube-prometheus-stack's dropped cgroups — and the benchmark model through the stand-in, several windows).
A table that differs names itself. The byte scan itself is held equal to a full JSON parse on awkward answers.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import polars as pl
import pytest
from prom_bench_model import T0
from prom_standin import Model, serve
from prom_support import (
    MISSING,
    PROMETHEUS,
    PROMTOOL,
    load_scenario,
)

from recordings.prometheus.build import PrometheusImport, import_prometheus
from recordings.prometheus.client import Block, ClientOptions, _merge_blocks, _parse_block, scan_matrix
from recordings.reader import open_recording

GOLDEN = Path(__file__).with_name("prom_columns_golden.json")
TABLES = ("ticks", "node_stats", "system_container_stats", "pod_stats", "container_stats", "objects")
SCENARIOS = {  # name → (bundled scenario, chart_drops, every, extra import flags)
    "sidecar-stress": ("sidecar-stress", False, 1, ("--window", "2m")),
    "disk-pressure-20s": ("disk-pressure", False, 2, ()),
    "sidecar-chart": ("sidecar-stress", True, 1, ()),
}


def digest(rec: Path) -> dict[str, object]:
    """Per table: rows and a SHA-256 of its rows in a canonical order; the manifest's notes."""
    reader = open_recording(rec)
    out: dict[str, object] = {}
    for table in TABLES:
        df = reader.scan(table).collect()
        df = df.sort(pl.all(), nulls_last=True)
        out[table] = [df.height, hashlib.sha256(df.write_csv().encode()).hexdigest()]
    out["notes"] = list(reader.manifest.notes)
    return out


def _scenario(name: str, work: Path) -> dict[str, object]:
    scenario, chart_drops, every, extra = SCENARIOS[name]
    out = work / "imp"
    with contextlib.contextmanager(load_scenario)(scenario, work, chart_drops=chart_drops, every=every) as case:
        argv = [sys.executable, "-m", "replay.cli", "import", "--prometheus", case.url, "--from"]
        argv += [f"{case.start}", "--to", f"{case.end}", "--lookback", "5s"]
        done = subprocess.run([*argv, "-o", str(out), *case.side, *extra], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    return digest(out)


def _standin(work: Path) -> dict[str, object]:
    server = serve(Model(3, 4, 1))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = work / "imp"
        spec = PrometheusImport(
            client=ClientOptions(url=f"http://127.0.0.1:{server.server_address[1]}"),
            start=T0 + 600,
            end=T0 + 3600 - 10,
            window=700.0,
        )
        import_prometheus(spec, out)
        return digest(out)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = orjson.loads(GOLDEN.read_bytes())
    return data


@pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_scenario_imports_to_the_same_tables(name: str, golden: dict[str, dict[str, object]], tmp_path: Path) -> None:
    got = _scenario(name, tmp_path)
    for table, want in golden[name].items():
        assert got[table] == want, (name, table)


def test_the_benchmark_model_imports_to_the_same_tables(golden: dict[str, dict[str, object]], tmp_path: Path) -> None:
    got = _standin(tmp_path)
    for table, want in golden["standin"].items():
        assert got[table] == want, ("standin", table)


def _answer(result: list[dict[str, object]], **extra: object) -> bytes:
    return orjson.dumps({"status": "success", **extra, "data": {"resultType": "matrix", "result": result}})


AWKWARD = [
    {"metric": {"pod": 'x"},"values":[[', "node": "n1", "ns": ']]},{"metric":'}, "values": [[1.5, "1"], [2, "NaN"]]},
    {"metric": {}, "values": [[1763000000, "+Inf"], [1763000010.25, "-Inf"], [1763000020, "1.5e+09"]]},
    {"metric": {"a": "é ✓"}, "values": [[3, "-0.25"]]},
]


def _same(a: Block, b: Block) -> bool:
    return list(a.labels) == list(b.labels) and a.samples.equals(b.samples)


def test_the_byte_scan_reads_what_a_whole_parse_reads() -> None:
    body = _answer(AWKWARD, warnings=["a store did not answer"])
    envelope, block = scan_matrix(body) or pytest.fail("not scanned")
    assert envelope == {
        "status": "success",
        "warnings": ["a store did not answer"],
        "data": {"resultType": "matrix", "result": []},
    }
    assert _same(block, _parse_block(orjson.loads(body)["data"], "q"))
    values = block.samples["value"].to_list()
    assert values[1] != values[1] and values[2:5] == [float("inf"), float("-inf"), 1.5e9]
    empty = scan_matrix(_answer([]))
    assert empty is not None and len(empty[1]) == 0 and empty[1].samples.height == 0


@pytest.mark.parametrize(
    "body",
    [
        orjson.dumps(
            {"status": "success", "data": {"resultType": "matrix", "result": AWKWARD}}, option=orjson.OPT_INDENT_2
        ),
        _answer([{"metric": {"a": "b"}, "values": [[1, "abc"]]}]),  # not a number: the whole parse names it
        _answer([{"metric": {"a": "b"}, "values": [[1, ""]]}]),
        _answer([{"metric": {"a": "b"}, "values": [[1, "1", 3]]}]),
        _answer([{"metric": {"a": "b"}, "values": []}]),
        _answer([{"metric": {"a": 1}, "values": [[1, "1"]]}]),
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}',
    ],
)
def test_an_answer_not_in_the_compact_shape_is_left_to_the_whole_parse(body: bytes) -> None:
    assert scan_matrix(body) is None


def test_sub_range_answers_are_stitched_per_series() -> None:
    first = _parse_block({"resultType": "matrix", "result": AWKWARD[:2]}, "q")
    second = _parse_block({"resultType": "matrix", "result": [AWKWARD[2], {**AWKWARD[0], "values": [[4, "7"]]}]}, "q")
    merged = _merge_blocks([first, second])
    assert list(merged.labels) == [AWKWARD[0]["metric"], {}, AWKWARD[2]["metric"]]
    assert [[(t, repr(v)) for t, v in s.samples] for s in merged.series()] == [
        [(1.5, "1.0"), (2.0, "nan"), (4.0, "7.0")],
        [(1763000000.0, "inf"), (1763000010.25, "-inf"), (1763000020.0, "1500000000.0")],
        [(3.0, "-0.25")],
    ]


def _write(work: Iterator[Path]) -> None:
    out = {name: _scenario(name, next(work)) for name in sorted(SCENARIOS)}
    out["standin"] = _standin(next(work))
    GOLDEN.write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp) / str(i) for i in range(100))
