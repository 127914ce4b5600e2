"""Prometheus as it is really set up (issue 26, items 1–5): one real server holds the same scenario as
several setups label and scrape it (told apart by a ``variant`` label), and each import either gives the
scenario's own evictions or refuses in one line naming the flag that fixes it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from prom_support import (
    MISSING,
    PROMETHEUS,
    PROMTOOL,
    Variant,
    backfill,
    openmetrics_from_recording,
    prometheus,
    run_evictlens_here,
)

from kube.errors import InputError
from recordings.prometheus.budget import Sizing, choose_window
from recordings.prometheus.timeargs import parse_time_arg
from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.scenario import run_scenario

needs_server = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)


def _v(name: str, **kw: object) -> Variant:
    extra = (("variant", name), *kw.pop("more", ()))  # type: ignore[misc]
    return Variant(extra=extra, **kw)  # type: ignore[arg-type]


@dataclass
class Setups:
    url: str
    start: float
    end: float
    side: list[str]
    expected: list[tuple[str, str, int, str]]
    nan_at: tuple[str, int, float]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_evictlens_here(*args)


def _evictions(rec: Path) -> list[tuple[str, str, int, str]]:
    done = _run("replay", str(rec), "--json")
    assert done.returncode == 0, done.stderr
    return [(e["node"], e["pod"], e["tick"], e["message"]) for e in orjson.loads(done.stdout)["evictions"]]


@pytest.fixture(scope="module")
def setups(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setups]:
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    work = tmp_path_factory.mktemp("prom-setups")
    rec = work / "rec"
    run_scenario(load_bundled("sidecar-stress"), rec)
    expected = _evictions(rec)
    node, _pod, tick, _msg = expected[0]
    ticks = open_recording(rec).ticks()
    variants = (
        _v("plain"),
        _v("exported", ksm_exported=True),
        _v("neip", node_exporter_by_ip=True),
        _v("cadip", cadvisor_by_ip=True),
        _v("multi", more=(("cluster", "eu-1"),)),
        _v("multi", more=(("cluster", "us-2"),)),
        _v("s15", interval=15.0),
        _v("s30", interval=30.0),
        _v("mixed", ksm_interval=30.0),
        _v("nan", nan_at=(node, tick)),
    )
    side = openmetrics_from_recording(rec, work / "om.txt", variants=variants)
    backfill(work / "om.txt", work / "data")
    from prom_support import write_side_files

    args = write_side_files(side, work)
    at = next(t.time.timestamp() for t in ticks if t.index == tick)
    with prometheus(work / "data") as srv:
        yield Setups(srv.url, ticks[0].time.timestamp(), ticks[-1].time.timestamp(), args, expected, (node, tick, at))


def _import(
    s: Setups, out: Path, variant: str | None, *extra: str, lookback: str = "5s"
) -> subprocess.CompletedProcess[str]:
    sel = ["--selector", f'variant="{variant}"'] if variant else []
    return _run(
        "import", "--prometheus", s.url, "--from", f"{s.start}", "--to", f"{s.end}", "--lookback", lookback,
        "-o", str(out), *sel, *s.side, *extra,
    )  # fmt: skip


def _notes(out: Path) -> list[str]:
    return list(orjson.loads((out / "manifest.json").read_bytes())["notes"])


def _one_line(done: subprocess.CompletedProcess[str], out: Path, *words: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


# -- 1. kube-state-metrics without honor_labels -----------------------------------------------------
@needs_server
def test_ksm_without_honor_labels_reads_the_exported_labels(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(setups, out, "exported")
    assert done.returncode == 0, done.stderr
    assert _evictions(out) == setups.expected  # not one phantom pod (the exporter's own)
    assert any("scraped without honor_labels" in n for n in _notes(out))
    labels = orjson.loads((out / "manifest.json").read_bytes())["options"]["labels"]
    assert labels["ksm_pod"] == "exported_pod" and labels["ksm_namespace"] == "exported_namespace"


@needs_server
def test_exported_label_flags_on_an_honoured_scrape_are_refused(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    line = _one_line(_import(setups, out, "plain", "--ksm-pod-label", "exported_pod"), out, "--ksm-pod-label")
    assert "with honor_labels" in line and "'pod'" in line


@needs_server
def test_plain_label_flags_on_exported_series_name_the_phantom_pod(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(setups, out, "exported", "--ksm-pod-label", "pod", "--ksm-namespace-label", "namespace")
    _one_line(done, out, "monitoring/kube-state-metrics-", "the exporter's own pod", "--ksm-pod-label")


# -- 2. node-label conventions ------------------------------------------------------------------------
@needs_server
@pytest.mark.parametrize(
    ("variant", "flag", "label"),
    [
        ("neip", "--node-exporter-node-label", "kubernetes_node"),
        ("cadip", "--cadvisor-node-label", "kubernetes_io_hostname"),
    ],
)
def test_a_node_label_that_matches_no_node_is_refused_with_the_flag_that_fixes_it(
    setups: Setups, tmp_path: Path, variant: str, flag: str, label: str
) -> None:
    out = tmp_path / "imp"
    _one_line(_import(setups, out, variant), out, flag, f"pass {flag} {label}")
    done = _import(setups, out, variant, flag, label)
    assert done.returncode == 0, done.stderr
    assert _evictions(out) == setups.expected
    assert "10.0.0." not in " ".join(open_recording(out).nodes())  # no invented nodes


# -- 3. several clusters behind one endpoint ----------------------------------------------------------
@needs_server
def test_several_clusters_are_refused_listing_them(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    line = _one_line(_import(setups, out, "multi"), out, 'cluster="eu-1"', 'cluster="us-2"', "--selector")
    assert "merged" in line
    done = _import(setups, out, "multi", "--selector", 'cluster="eu-1"')
    assert done.returncode == 0, done.stderr
    assert _evictions(out) == setups.expected


@needs_server
def test_the_whole_endpoint_without_a_selector_is_refused(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    _one_line(_import(setups, out, None), out, 'variant="plain"', "several clusters")


# -- 4. scrape intervals per family, from the imported data -----------------------------------------
@needs_server
def test_intervals_are_measured_per_family_on_the_imported_range(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(setups, out, "mixed", lookback="29s")
    assert done.returncode == 0, done.stderr
    options = orjson.loads((out / "manifest.json").read_bytes())["options"]
    assert options["scrape_intervals"]["cAdvisor"] == "10s"
    assert options["scrape_intervals"]["node-exporter"] == "10s"
    assert options["scrape_intervals"]["kube-state-metrics"] == "30s"
    notes = _notes(out)
    assert any(n.startswith("Prometheus scraped kube-state-metrics (") and "every 30s" in n for n in notes)
    assert not any(n.startswith("Prometheus scraped cAdvisor") for n in notes)


@needs_server
def test_a_15s_scrape_says_what_it_cannot_decide_even_when_the_range_ends_without_data(
    setups: Setups, tmp_path: Path
) -> None:
    out = tmp_path / "imp"
    later = setups.end + 1800  # the last 30 minutes of the range hold no sample at all
    done = _run(
        "import", "--prometheus", setups.url, "--from", f"{setups.start}", "--to", f"{later}", "--lookback", "14s",
        "--selector", 'variant="s15"', "-o", str(out), *setups.side,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    options = orjson.loads((out / "manifest.json").read_bytes())["options"]
    assert options["scrape_interval"] == "15s"
    note = next(n for n in _notes(out) if n.startswith("Prometheus scraped cAdvisor ("))
    assert "every 15s" in note and "a single 10s tick) is lost" in note and "known to within 15s" in note


@needs_server
def test_a_30s_scrape_misses_a_short_pressure_and_the_note_says_it_can(setups: Setups, tmp_path: Path) -> None:
    """sidecar-stress's pressure lasts less than 30 s: a 30 s scrape never sees it (PROMETHEUS.md's table)."""
    out = tmp_path / "imp"
    done = _import(setups, out, "s30", lookback="29s")
    assert done.returncode == 0, done.stderr
    assert _evictions(out) == []
    note = next(n for n in _notes(out) if n.startswith("Prometheus scraped cAdvisor ("))
    assert "every 30s" in note and "is lost" in note


# -- 5. time arguments, NaN -------------------------------------------------------------------------
@needs_server
def test_grafana_milliseconds_and_rfc3339_read_the_same_range(setups: Setups, tmp_path: Path) -> None:
    ms = _run(
        "import", "--prometheus", setups.url, "--from", str(int(setups.start * 1000)),
        "--to", str(int(setups.end * 1000)), "--lookback", "5s", "--selector", 'variant="plain"',
        "-o", str(tmp_path / "ms"), *setups.side,
    )  # fmt: skip
    assert ms.returncode == 0, ms.stderr
    iso = [datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z") for t in (setups.start, setups.end)]
    rfc = _run(
        "import", "--prometheus", setups.url, "--from", iso[0], "--to", iso[1], "--lookback", "5s",
        "--selector", 'variant="plain"', "-o", str(tmp_path / "rfc"), *setups.side,
    )  # fmt: skip
    assert rfc.returncode == 0, rfc.stderr
    assert _evictions(tmp_path / "ms") == _evictions(tmp_path / "rfc") == setups.expected


@needs_server
def test_a_relative_range_without_data_is_one_line(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _run("import", "--prometheus", setups.url, "--from", "now-6h", "--to", "now", "-o", str(out))
    _one_line(done, out, "no data between")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1716170400", 1716170400.0),
        ("1716170400000", 1716170400.0),
        ("1716170400.5", 1716170400.5),
        ("2024-05-20T02:00:00Z", 1716170400.0),
        ("2024-05-20T04:00:00+02:00", 1716170400.0),
        ("now", 1716170400.0),
        ("now-6h", 1716170400.0 - 6 * 3600),
        ("now-1d", 1716170400.0 - 86400),
        ("now-30m", 1716170400.0 - 1800),
    ],
)
def test_time_arguments_as_people_paste_them(text: str, seconds: float) -> None:
    assert parse_time_arg(text, "--from", now=1716170400.0) == seconds


@pytest.mark.parametrize("text", ["yesterday", "2024-05-20T02:00:00", "now-6x", "-5", "99999999999999999999", "inf"])
def test_a_bad_time_is_one_line_naming_the_flag(text: str) -> None:
    with pytest.raises(InputError, match="--to"):
        parse_time_arg(text, "--to", now=1716170400.0)


@needs_server
def test_a_nan_sample_at_an_eviction_tick_is_noted(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(setups, out, "nan")
    assert done.returncode == 0, done.stderr
    node, _tick, at = setups.nan_at
    when = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    note = next(n for n in _notes(out) if n.startswith("node.memory.workingSetBytes: 1 NaN sample"))
    assert f"first on {node} at {when}" in note and "decides without that signal" in note
    assert "note: node.memory.workingSetBytes: 1 NaN sample" in done.stderr


# -- 6. memory budget -------------------------------------------------------------------------------
def test_the_window_is_the_largest_that_fits_the_budget() -> None:
    day = Sizing.of(pods=11_000, containers=22_000, nodes=100)
    window = choose_window(day, 10.0, 2**30, None, 86400.0)
    assert 60.0 <= window < 600.0 and window % 10.0 == 0
    assert day.bytes_for(window, 10.0) <= 2**30 < day.bytes_for(window + 10.0, 10.0)
    small = Sizing.of(pods=100, containers=200, nodes=2)
    assert choose_window(small, 10.0, 2**30, None, 86400.0) == 7200.0  # capped: larger only saves requests
    assert choose_window(small, 10.0, 2**30, 3600.0, 86400.0) == 3600.0


def test_a_window_past_the_budget_is_refused_with_the_largest_that_fits() -> None:
    day = Sizing.of(pods=11_000, containers=22_000, nodes=100)
    with pytest.raises(InputError, match=r"--window.*11,000 pods.*use --window \d+m\d*s? or less") as err:
        choose_window(day, 10.0, 2**30, 3600.0, 86400.0)
    assert "GiB" in str(err.value)
    with pytest.raises(InputError, match="--memory-budget"):
        choose_window(day, 10.0, 400 * 2**20, None, 86400.0)


@needs_server
def test_a_tight_budget_imports_in_small_windows_with_the_same_answer(setups: Setups, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(setups, out, "plain")
    assert done.returncode == 0, done.stderr
    counted = orjson.loads((out / "manifest.json").read_bytes())["options"]["series_counted"]
    sizing = Sizing.of(counted["pods"], counted["containers"], 2)
    tight = str(sizing.bytes_for(20.0, 10.0))  # two steps of this small cluster
    shutil.rmtree(out)
    done = _import(setups, out, "plain", "--memory-budget", tight, "--window", "10m")
    _one_line(done, out, "--window", "past the", "use --window")
    done = _import(setups, out, "plain", "--memory-budget", tight)
    assert done.returncode == 0, done.stderr
    window = orjson.loads((out / "manifest.json").read_bytes())["options"]["window"]
    assert float(window.removesuffix("s")) < setups.end - setups.start  # several windows
    assert _evictions(out) == setups.expected
