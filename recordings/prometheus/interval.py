"""Scrape intervals per series family, measured on the data the import actually read.

Why apart from a probe: an interval sampled near the end of the range disappears when that end
holds no data, and one interval does not describe an import whose exporters are scraped by
different jobs (cAdvisor every 10 s, node-exporter every 30 s, kube-state-metrics every minute).
Each family here is one ``timestamp()`` range query per window (one series per node): the distinct
sample times a node's series show on the step grid, whose gaps are the scrape interval (a missed
scrape shows as one double gap; the median ignores it). A step coarser than the interval hides the
finer spacing: the interval is then known only to be at most the step, which is what matters here.

What an interval decides against the kubelet's 10 s eviction loop (``pkg/kubelet/eviction``,
``evictionMonitoringPeriod``): a pass reads the stats of the last scrape, so with 15 s scrapes one
pass in three reads a sample already used (its time has not advanced, so the manager ignores it,
as it does stale cAdvisor stats), with 30 s two in three; pressure that lasted less than the interval
between two scrapes is never seen, and an eviction's time is known to within one interval.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

from .client import Series
from .labels import Conventions

KUBELET_LOOP = 10.0  # the eviction manager's monitoring period (pkg/kubelet/eviction: evictionMonitoringPeriod)


def family_queries(conv: Conventions) -> dict[str, tuple[str, str]]:
    """Family → (PromQL of its newest sample time per node, what the family measures)."""
    k, e = conv.kubelet_node, conv.node_exporter_node

    def ts(metric: str, label: str | None, *extra: str) -> str:
        by = f" by ({label})" if label else ""
        return f"max{by} (timestamp({metric}{conv.matchers(label, *extra)}))"

    return {
        "cAdvisor": (
            ts("container_memory_working_set_bytes", k, 'container!="POD"'),
            "node and pod memory, container filesystems",
        ),
        "kubelet /metrics/resource": (ts("node_memory_working_set_bytes", k), "node memory working set"),
        "kubelet /metrics": (ts("kubelet_container_log_filesystem_used_bytes", k), "container log usage"),
        "node-exporter": (
            ts("node_filesystem_avail_bytes", e, f'mountpoint="{conv.nodefs_mountpoint}"'),
            "filesystems, processes (and node memory when it is the source)",
        ),
        "kube-state-metrics": (ts("kube_pod_info", None), "pods' existence, phase and reason; node conditions"),
    }


class Intervals:
    """Gaps between distinct sample times per family, accumulated window by window (bounded memory:
    a counter of gap lengths and the last time per series)."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.gaps: dict[str, Counter[float]] = {}
        self._last: dict[tuple[str, str], float] = {}

    def add(self, family: str, series: Sequence[Series]) -> None:
        counter = self.gaps.setdefault(family, Counter())
        for s in series:
            key = (family, "|".join(f"{k}={v}" for k, v in sorted(s.labels.items())))
            last = self._last.get(key)
            for at in s.values.to_list():
                if at is None or at != at:  # NaN
                    continue
                if last is not None and at > last + 1e-3:
                    counter[round(at - last, 1)] += 1
                if last is None or at > last:
                    last = at
            if last is not None:
                self._last[key] = last

    def median(self, family: str) -> float | None:
        counter = self.gaps.get(family)
        if not counter or sum(counter.values()) < 2:
            return None
        return float(statistics.median_low(sorted(counter.elements())))

    def measured(self) -> dict[str, float]:
        return {f: m for f in self.gaps if (m := self.median(f)) is not None}


def interval_notes(intervals: Mapping[str, float], step: float, queried: Mapping[str, str]) -> list[str]:
    """What each family's interval can and cannot decide, and a step finer than the intervals."""
    notes: list[str] = []
    for family, every in intervals.items():
        what = queried.get(family, "")
        if every <= KUBELET_LOOP + 0.5:
            continue
        ticks = every / KUBELET_LOOP
        notes.append(
            f"Prometheus scraped {family} ({what}) every {every:g}s (median, measured over the imported range); "
            f"the kubelet decides every {KUBELET_LOOP:g}s: a pass reads the last scrape, so pressure seen only "
            f"between two scrapes (e.g. in a single {KUBELET_LOOP:g}s tick) is lost, an eviction's time is known "
            f"to within {every:g}s, and {ticks - 1:.1f} of every {ticks:.1f} passes re-read a sample (ignored, "
            "as the kubelet ignores stats that did not advance); what lasts longer than the interval is decided "
            "as the kubelet did"
        )
    if intervals and step < min(intervals.values()) - 0.5:
        notes.append(
            f"--step {step:g}s is finer than the scrape interval ({min(intervals.values()):g}s): "
            "consecutive ticks repeat a sample"
        )
    return notes
