"""The window sized from what is being fetched, so an import stays within a memory budget.

Why: an import holds one window of every query's answer (and the next window's on its way) and
assembles it into tables; that costs per step about a constant per pod and container series, so a
default one-hour window needs ~1.3 GB at 2,200 pods and several GB at 11,000. The series are
counted before importing (the most present in any hour of the range), the window is the largest
that fits ``--memory-budget``, and an explicit ``--window`` past it is refused with the largest that
fits. The constants were fitted to ``tests/recordings/prometheus/bench_prom_import.py`` (peak RSS of
the import process; README, Performance): at 20 nodes × 110 pods (6,600 pod and container series)
507 MB with a 5-minute window and 667 MB with 10 minutes — ~810 bytes per series per step on ~350 MB;
at 100 nodes (33,000 series) 1,223 MB with a 190 s window — so ~14 KB per series whatever the window
(each window's answers carry every series' labels, twice with the next window in flight, and the
rarely-changing kube-state-metrics series are read once per window) on ~256 MB. Rounded up here, so
the budget is an upper bound, not a target.
"""

from __future__ import annotations

from dataclasses import dataclass

from kube.errors import InputError

from .client import PrometheusClient
from .labels import Conventions

BASE_BYTES = 280 * 2**20
"""Interpreter, polars, the client pool: fitted ~256 MB."""
PER_SERIES = 10_000
"""Bytes per pod or container series whatever the window: the labels of every answer (two windows in flight),
the pods' kube-state-metrics series when a pod version is observed, pod objects, the allocator's slack.
Fitted ~7 KB since answers are read as columns (100 nodes × 110 pods: 0.82 GB in 150 s windows, 1.13 GB in
5-minute ones), plus a margin that keeps a 1 GiB budget's peak near 0.85 GB."""
PER_SERIES_STEP = 800
"""Bytes per pod or container series per step: answers as columns (two windows), a node batch's joins, the
assembled tables. Fitted ~600 (the slope between those two windows), plus a margin."""
PER_NODE_STEP = 20_000
"""Bytes per node per step: the node-level series (a few dozen) and the tick rows."""
MAX_WINDOW = 7200.0
"""Past two hours a larger window only saves requests."""
DEFAULT_BUDGET = 2**30


@dataclass(frozen=True)
class Sizing:
    pods: int
    containers: int
    nodes: int
    per_step: int  # bytes
    fixed: int = BASE_BYTES  # bytes whatever the window

    @classmethod
    def of(cls, pods: int, containers: int, nodes: int) -> Sizing:
        """The model's cost of this many series (the constants above)."""
        series = pods + containers
        per_step = PER_SERIES_STEP * series + PER_NODE_STEP * nodes
        return cls(pods, containers, nodes, per_step, BASE_BYTES + PER_SERIES * series)

    def bytes_for(self, window: float, step: float) -> int:
        return self.fixed + int(max(1, round(window / step))) * self.per_step

    def what(self) -> str:
        return f"{self.pods:,} pods, {self.containers:,} containers on {self.nodes} nodes"


def parse_budget(text: str) -> int:
    """``1Gi``, ``800Mi``, ``2G`` or bytes → bytes (``--memory-budget``)."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    value = text.strip()
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            number, scale = value[: -len(suffix)], units[suffix]
            break
    else:
        number, scale = value, 1
    try:
        amount = float(number) * scale
    except ValueError:
        amount = -1.0
    if not amount > 0 or amount != amount:
        raise InputError(f"expected a size such as 1Gi, 800Mi or 2G, got {text!r}", source="--memory-budget")
    return int(amount)


def measure(client: PrometheusClient, conv: Conventions, nodes: int, start: float, end: float, step: float) -> Sizing:
    """The most pod and container series present in any hour of the range (the whole range when shorter)."""
    k = conv.kubelet_node
    span = end - start + step
    hour = min(span, 3600.0)

    def most(selector: str) -> int:
        inner = f"count(last_over_time({selector}[{_ms(hour)}]))"
        query = f"max_over_time({inner}[{_ms(span)}:{_ms(hour)}])" if span > hour else inner
        result = client.query(query, end)
        return int(result[0].values[0]) if result and len(result[0]) else 0

    containers = most(f"container_memory_working_set_bytes{conv.matchers(k, *_CONTAINERS)}")
    pods = max(
        most(f"container_memory_working_set_bytes{conv.matchers(k, *_POD_CGROUPS)}"),
        most(f"kube_pod_info{conv.matchers(conv.ksm_node)}"),
    )
    return Sizing.of(pods, containers, nodes)


_CONTAINERS = ('container!=""', 'container!="POD"', 'pod!=""')
_POD_CGROUPS = ('container=""', 'pod!=""')


def choose_window(sizing: Sizing, step: float, budget: int, asked: float | None, span: float) -> float:
    """The window for this import: ``asked`` when it fits the budget (refused otherwise), else the largest
    that fits; never more than the range (``span``, seconds) holds."""
    if asked is not None:
        asked = min(asked, span)
    room = budget - sizing.fixed
    fits_steps = room // sizing.per_step if room > 0 else 0
    if fits_steps < 1:
        raise InputError(
            f"{_size(budget)} cannot hold even one {step:g}s step of {sizing.what()} "
            f"(about {_size(sizing.bytes_for(step, step))}): raise it, or narrow with --node/--selector",
            source="--memory-budget",
        )
    largest = min(MAX_WINDOW, fits_steps * step)
    if asked is None:
        return max(step, largest)
    if asked > largest + 1e-9:
        raise InputError(
            f"{_dur(asked)} would need about {_size(sizing.bytes_for(asked, step))} for {sizing.what()} at "
            f"{step:g}s steps, past the {_size(budget)} budget: use --window {_dur(largest)} or less "
            "(or leave it out: it is sized to fit), or raise --memory-budget",
            source="--window",
        )
    return asked


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _dur(seconds: float) -> str:
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"
