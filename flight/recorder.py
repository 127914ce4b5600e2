"""The flight recorder's hook: every real eviction or kernel kill the recorder stores becomes an incident.

The recorder calls :meth:`FlightRecorder.tick_stored` on its event loop after each committed tick
(recordings/recorder/hooks.py); this only picks the new incidents and queues them. One worker thread then, per
incident: takes a snapshot of the live recording (``recordings.snapshot.live_snapshot``: the last finished tick,
the writer undisturbed), cuts the node's window from ``before`` the incident to now (flight/window.py), explains it
with the engine (flight/explain.py), packs the window and publishes ``DIR/incidents/NAME/`` whole, logs one line,
counts it and hands report.json to the webhook thread. So the report is out one tick after the event is stored
plus the explaining (seconds). Once the after-window has passed, the window is cut, explained and packed again
(``window.complete`` turns true); an incident still waiting for that when the recorder stops is finished with
what there is, and one waiting when it was killed is finished by the next start (report.json says it is not
complete).
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from recordings import format as fmt
from recordings.recorder.hooks import StoredTick

from .incident import Incident, from_evictions, from_kills, stamp
from .store import PACK, IncidentStore, dumps

SCHEMA = "evictlens-incident"
SCHEMA_VERSION = 1
STOP_WAIT_S = 60.0
"""How long a stopping recorder waits for incidents being made (a pod's grace period should cover it)."""


@dataclass(frozen=True)
class FlightOptions:
    before_s: float
    after_s: float
    max_incidents: int
    max_bytes: int
    webhook: str | None = None


@dataclass
class _Job:
    incident: Incident
    repack: bool = False
    final: bool = False


def _log(line: str) -> None:
    print(f"evictlens record: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _snapshot(root: Path) -> Iterator[Path]:
    """``recordings.snapshot.live_snapshot``: what readers of a live recording read."""
    from recordings.snapshot import live_snapshot

    with live_snapshot(root) as snap:
        yield snap


class FlightRecorder:
    def __init__(self, root: Path, opts: FlightOptions, *, log: Callable[[str], None] = _log) -> None:
        self.root, self.opts, self.log = Path(root), opts, log
        self.store = IncidentStore(self.root, max_incidents=opts.max_incidents, max_bytes=opts.max_bytes, log=log)
        self.metrics: Any = None
        self.webhook: Any = None
        self.seen: set[str] = set()
        self.pending: dict[str, tuple[Incident, int]] = {}  # name → (incident, when its after-window ends, µs)
        self._pending_lock = threading.Lock()  # the worker adds, the loop takes
        self.recording_start: int | None = None
        self.failures = 0
        self.disabled = False
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._webhook_failures: Any = None
        self._failed_incidents: Any = None
        if opts.webhook:
            from .webhook import WebhookPoster

            self.webhook = WebhookPoster(opts.webhook, log=log, failed=self._webhook_failed)

    # -- wiring ---------------------------------------------------------------------------
    def attach_metrics(self, metrics: Any) -> None:
        """The recorder's metrics (``--listen``): incidents by kind, the last incident's time, webhook failures."""
        self.metrics = metrics
        registry = getattr(metrics, "registry", None)
        if registry is None:
            return
        from prometheus_client import Counter

        self._failed_incidents = Counter(
            "evictlens_recorder_incident_failures",
            "Incidents that could not be made (said in the log; the recording keeps the event).",
            registry=registry,
        )
        if self.webhook is not None:
            self._webhook_failures = Counter(
                "evictlens_recorder_webhook_failures",
                "Incident reports the webhook did not accept after every retry (the incidents stay on disk).",
                registry=registry,
            )

    def _webhook_failed(self) -> None:
        if self._webhook_failures is not None:
            self._webhook_failures.inc()

    def _start(self) -> None:
        """On the first tick: the directory exists now; find what a previous run left."""
        try:
            self.store.ensure()
        except OSError as exc:
            self.disabled = True
            self.log(f"no incidents: cannot create {self.store.dir} ({exc.strerror}); the recording goes on")
            return
        try:
            manifest = fmt.Manifest.from_json((self.root / fmt.MANIFEST).read_bytes(), source=str(self.root))
            if manifest.start_time:
                from datetime import datetime

                start = datetime.fromisoformat(manifest.start_time.replace("Z", "+00:00"))
                self.recording_start = int(start.timestamp() * 1_000_000)
        except (OSError, ValueError):
            pass
        for path, doc in self.store.reports():
            key = doc.get("incident", {}).get("key")
            if isinstance(key, str):
                self.seen.add(key)
            if not doc.get("window", {}).get("complete", True):
                inc = _incident_of(doc)
                if inc is not None:
                    self.pending[path.name] = (inc, max(inc.time + int(self.opts.after_s * 1e6), inc.observed))
        self._thread = threading.Thread(target=self._work, name="evictlens-incidents", daemon=True)
        self._thread.start()

    # -- the recorder's hooks (on its event loop: never block) ------------------------------
    def tick_stored(self, stored: StoredTick) -> None:
        if self.disabled:
            return
        if self._thread is None:
            self._start()
            if self.disabled:
                return
        new = [i for i in (*from_evictions(stored.evictions), *from_kills(stored.kills)) if i.key not in self.seen]
        early = []
        for inc in new:
            self.seen.add(inc.key)
            if self.recording_start is not None and inc.time < self.recording_start - 1_000_000:
                early.append(inc)
                continue
            self._jobs.put(_Job(inc))
        if early:
            first = min(early, key=lambda i: i.time)
            self.log(
                f"{len(early)} evictions or kills stored in tick {stored.index} happened before the recording started "
                f"(the first {first.kind} of {first.who} at {stamp(first.time)}): no incident, no pass to explain"
            )
        with self._pending_lock:
            due = [(name, inc) for name, (inc, until) in self.pending.items() if stored.time >= until]
            for name, _inc in due:
                del self.pending[name]
        for _name, inc in due:
            self._jobs.put(_Job(inc, repack=True))

    def stopped(self) -> None:
        if self._thread is None:
            if self.webhook is not None:
                self.webhook.close()
            return
        with self._pending_lock:
            left = [inc for inc, _until in self.pending.values()]
            self.pending.clear()
        for inc in left:
            self._jobs.put(_Job(inc, repack=True, final=True))
        self._jobs.put(None)
        self._thread.join(STOP_WAIT_S)
        if self._thread.is_alive():
            self.log(
                f"incidents still being made after {STOP_WAIT_S:.0f}s: left for the next start (the recording keeps "
                "every event)"
            )
        if self.webhook is not None:
            self.webhook.close()

    # -- the worker thread --------------------------------------------------------------------
    def _work(self) -> None:
        """Take what is queued as one batch: one snapshot (and one check of its parts' checksums) serves every
        incident queued meanwhile (a burst of evictions in one tick costs one snapshot, not one each)."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            batch, stop = [job], False
            while not stop:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                else:
                    batch.append(more)
            self._batch(batch)
            if stop:
                return

    def _failed(self, job: _Job, exc: BaseException) -> None:
        self.failures += 1
        if self._failed_incidents is not None:
            self._failed_incidents.inc()
        text = exc.one_line() if hasattr(exc, "one_line") else f"{type(exc).__name__}: {exc}"
        self.log(f"incident {job.incident.name} could not be made: {text}")

    def _batch(self, jobs: list[_Job]) -> None:
        from recordings.reader import open_recording

        jobs = [j for j in jobs if not j.repack or (self.store.dir / j.incident.name).is_dir()]  # else dropped
        if not jobs:
            return
        try:
            with _snapshot(self.root) as snap:
                live = open_recording(snap)  # checks every part's checksums: once per batch
                for job in jobs:
                    try:
                        self._make(job, live)
                    except Exception as exc:
                        self._failed(job, exc)
        except Exception as exc:  # the snapshot itself
            for job in jobs:
                self._failed(job, exc)

    def _make(self, job: _Job, live: Any) -> None:
        from recordings.reader import open_recording

        from .explain import explain_incident
        from .report_text import headline, render
        from .window import cut_window

        inc = job.incident
        before, after = int(self.opts.before_s * 1e6), int(self.opts.after_s * 1e6)
        start, until = inc.time - before, max(inc.time + after, inc.observed)  # with the tick that stored it
        work = self.store.dir / f".{inc.name}.work.tmp"
        fmt.remove_tree(work)
        fmt.make_private_dir(work)
        try:
            last = _last_tick_us(live, inc.node)
            note = (
                f"an incident's window (flight recorder): {inc.node} from {stamp(start)} to "
                f"{stamp(min(until, last or until))}, cut from {self.root.name}"
            )
            ticks = cut_window(live, work / "window", inc.node, start, until, note=note)
            doc: dict[str, Any] = {"format": SCHEMA, "schema_version": SCHEMA_VERSION}
            doc["incident"] = inc.to_json() | {"who": inc.who}
            complete = last is not None and last >= until
            doc["window"] = {
                "from": stamp(start),
                "to": stamp(min(until, last)) if last is not None else None,
                "until": stamp(until),
                "complete": complete,
                "ticks": ticks,
            }
            if job.final and not complete:
                doc["window"]["note"] = "the recorder stopped before the after-window ended: the window ends there"
            doc["path"] = str(self.store.dir / inc.name)
            doc["pack"] = str(self.store.dir / inc.name / PACK) if ticks else None
            if ticks:
                doc |= explain_incident(open_recording(work / "window"), inc, window=(start, until))
            else:
                doc |= _no_window(inc)
            text = render(doc)
            doc.pop("explanation_text", None)
            doc["generated"] = stamp(time.time_ns() // 1000)
            previous = self._previous(inc.name) if job.repack else None
            doc["first_published"] = (previous or {}).get("first_published") or doc["generated"]
            revised = previous is not None and _verdict(previous) != _verdict(doc)
            doc["revised"] = revised  # the whole after-window changed what the first report said
            path = self.store.publish(inc.name, doc, text, (work / "window") if ticks else None)
        finally:
            fmt.remove_tree(work)
        if not job.repack:
            self.log(headline(doc))
            self.store.enforce(newest=path)
            if self.metrics is not None:
                self.metrics.incident(inc.kind, inc.time / 1e6)
            if self.webhook is not None:
                self.webhook.post(inc.name, dumps(doc))
            if not complete and not job.final:
                with self._pending_lock:
                    self.pending[inc.name] = (inc, until)
        elif revised:
            self.log(f"revised with the whole after-window: {headline(doc)}")
            if self.webhook is not None:
                self.webhook.post(inc.name, dumps(doc))

    def _previous(self, name: str) -> dict[str, Any] | None:
        try:
            doc = orjson.loads((self.store.dir / name / "report.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return doc if isinstance(doc, dict) else None


def _verdict(doc: dict[str, Any]) -> str:
    """What a report concludes (its headline without the path): a re-made report that differs is revised."""
    from .report_text import headline

    return headline({**doc, "path": ""})


def _last_tick_us(rec: Any, node: str) -> int | None:
    import polars as pl

    top = (
        rec.scan("ticks")
        .filter((pl.col("node") == node) & pl.col("ok"))
        .select(pl.col("time").dt.epoch("us").max())
        .collect()
        .item()
    )
    return None if top is None else int(top)


def _no_window(inc: Incident) -> dict[str, Any]:
    return {
        "settings": None,
        "holds": f"the recording holds no tick of {inc.node} in the window: nothing to replay or explain",
        "moment": "none",
        "explanation": None,
        "no_explanation": f"no recorded tick of {inc.node} in the window",
        "smallest_change": None,
    }


def _incident_of(doc: dict[str, Any]) -> Incident | None:
    """An incident read back from its report.json (a restart finishing its after-window)."""
    from datetime import datetime

    i = doc.get("incident") or {}
    try:
        when = int(i.get("time_us") or datetime.fromisoformat(str(i["time"]).replace("Z", "+00:00")).timestamp() * 1e6)
        seen = int(
            i.get("stored_us") or datetime.fromisoformat(str(i["stored"]).replace("Z", "+00:00")).timestamp() * 1e6
        )
        return Incident(
            kind=str(i["kind"]),
            node=str(i["node"]),
            namespace=i.get("namespace"),
            pod=i.get("pod"),
            uid=i.get("uid"),
            container=i.get("container"),
            time=when,
            observed=seen,
            message=i.get("message"),
            victim=i.get("victim"),
            pid=i.get("pid"),
            key=str(i.get("key") or ""),
        )
    except (KeyError, ValueError, TypeError):
        return None
