"""The timeline's plot and the overview's next-to-go, without Textual: the signal it opens on, the zoom around the
thresholds, integer count ticks, a legend listing each condition once, and who goes next from the rankings."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import polars as pl

from replay.results import RankedPod
from tui.export import export_path, write_new
from tui.results_dir import open_results_dir
from tui.screens.overview import next_to_go
from tui.timeline_model import Band, TimelineModel
from tui.widgets.signal_plot import SignalPlot, legend, y_ticks


def _model(results_dir: Path, signal: str | None = None) -> TimelineModel:
    view = open_results_dir(results_dir)
    evictions = view.evictions_of("kind-worker")
    if signal is not None:
        evictions = [dataclasses.replace(e, signal=signal) for e in evictions]
    return TimelineModel(
        view.node("kind-worker"),
        view.node_series("kind-worker"),
        view.result.conditions,
        evictions,
        view.real_of("kind-worker"),
    )


def test_the_timeline_opens_on_the_signal_the_eviction_was_for(results_dir: Path) -> None:
    assert _model(results_dir).signal == "memory.available"
    assert _model(results_dir, "imagefs.available").signal == "imagefs.available"


def test_a_reading_far_below_the_top_is_zoomed_around_its_threshold(results_dir: Path) -> None:
    model = _model(results_dir)
    # 67Mi against 100Mi with an 8Gi top: on the 0 line unless zoomed
    (bottom, top), zoomed = model._y_range([8192.0, 67.0], [100.0, 100.0])
    assert zoomed and (bottom, top) == (0.0, 300.0)
    model.zoom_y = False
    assert model._y_range([8192.0, 67.0], [100.0])[1] is False
    model.zoom_y = None  # near the top: the whole range
    assert model._y_range([5.6, 1.4], [1.5])[1] is False


def test_a_reading_that_never_nears_the_thresholds_is_not_zoomed(results_dir: Path) -> None:
    """2.5Gi falling to 927Mi against 100Mi: on a 0–300Mi axis it would be a flat line at the top."""
    model = _model(results_dir)
    assert model._y_range([2560.0, 927.0], [100.0]) == ((0.0, 2560.0 * 1.05), False)
    model.zoom_y = True  # z still zooms
    assert model._y_range([2560.0, 927.0], [100.0]) == ((0.0, 300.0), True)


def test_z_toggles_the_zoom(results_dir: Path) -> None:
    model = _model(results_dir)
    before = model.plot(80).zoomed
    model.toggle_zoom_y()
    assert model.plot(80).zoomed is not before


def test_count_axes_are_labelled_with_integers() -> None:
    ticks, labels = y_ticks(0.0, 10.0, "count")
    assert all(float(t).is_integer() for t in ticks)
    assert all("." not in label for label in labels)
    assert all("." not in label for label in y_ticks(0, 6_414_075, "count")[1])


def test_the_legend_lists_a_condition_once_however_many_spells(results_dir: Path) -> None:
    data = _model(results_dir).plot(80)
    data = dataclasses.replace(data, bands=[Band("MemoryPressure", 0, 2), Band("MemoryPressure", 5, 8)])
    text = legend(data).plain
    assert text.count("MemoryPressure") == 1
    assert "memory.available" in text and "threshold" in text


def test_next_to_go_is_the_first_evictable_pod_after_the_evicted_one(results_dir: Path) -> None:
    view = open_results_dir(results_dir)
    assert next_to_go(view) == {}  # the sample's other pods are critical
    (e,) = view.result.evictions
    web = RankedPod(
        rank=len(e.ranking) + 1,
        namespace="default",
        pod="web",
        uid="u-web",
        qos="BestEffort",
        priority=0,
        has_stats=True,
        exceeds_request=True,
        usage=1 << 20,
        request=0,
        usage_above_request=1 << 20,
        process_count=None,
        critical=False,
        reason="",
        decided_by="usage",
        margin=int(859.5 * (1 << 20)),
    )
    view.result = dataclasses.replace(view.result, evictions=(dataclasses.replace(e, ranking=(*e.ranking, web)),))
    assert next_to_go(view) == {"kind-worker": ("default/web", "usage, 859.5Mi short")}
    assert next_to_go(view, e.time.replace(year=2000)) == {}  # before the eviction: no ranking yet


def test_an_export_never_replaces_an_earlier_one(tmp_path: Path) -> None:
    path = export_path(tmp_path, "evictlens-eviction-default/web-0-ranking", "csv")
    assert "/" not in path.name.removeprefix("evictlens") and path.name.startswith("evictlens-eviction-default_web-0")
    first, second = write_new(path, "a"), write_new(path, "b")
    assert first != second and first.read_text() == "a" and second.read_text() == "b"


def _rendered_y_labels(model: TimelineModel, rows: int = 16) -> list[str]:
    """The y-axis labels as the plot draws them (plotext's text, colours stripped)."""
    plot = SignalPlot()
    plot.draw(model.plot(60))
    plot.plt.plotsize(70, rows)
    text = re.sub(r"\x1b\[[0-9;]*m", "", plot.plt.build())
    return [line.split("┤")[0].strip() for line in text.splitlines() if "┤" in line]


def test_a_zoomed_axis_never_prints_the_same_label_twice(results_dir: Path) -> None:
    """A 100Mi threshold on a node with GiB free: zoomed to 0–300Mi the axis reads in MiB, each label once
    (it read 0.0, 0.1, 0.1, 0.2, 0.3 in GiB)."""
    model = _model(results_dir)
    model.series = model.series.with_columns(
        pl.when(pl.col("signal") == "memory.available")
        .then(pl.lit(100 << 20))
        .otherwise(pl.col("threshold_value"))
        .alias("threshold_value")
    )
    model.zoom_y = True
    data = model.plot(60)
    assert data.zoomed and data.unit == "MiB"
    labels = _rendered_y_labels(model)
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    assert [float(label.replace(",", "")) for label in labels] == sorted(
        (float(label.replace(",", "")) for label in labels), reverse=True
    )


def test_an_inode_axis_reads_in_whole_numbers(results_dir: Path) -> None:
    model = _model(results_dir)
    model.signal = "nodefs.inodesFree"
    labels = _rendered_y_labels(model)
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    assert all(label.replace(",", "").isdigit() for label in labels)


def test_tick_labels_are_exact_and_distinct_at_any_scale() -> None:
    for top in (0.0003, 0.29, 0.33, 1.25, 4.5, 5.6, 25.0, 300.0, 1e9):
        for unit in ("MiB", "count"):
            ticks, labels = y_ticks(0.0, top, unit)
            assert len(set(labels)) == len(labels), (top, unit, labels)
            assert all(abs(float(label.replace(",", "")) - t) < 1e-9 for t, label in zip(ticks, labels, strict=True))
            if unit == "count":
                assert all(float(t).is_integer() for t in ticks)
