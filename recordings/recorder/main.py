"""``evictlens record``: ties client, watches, poller, writer and status line together.

One asyncio loop does everything, so the writer is only touched from one thread: watches
feed objects in as they arrive, each tick polls all nodes concurrently and commits one
journal frame.  Stopping (Ctrl-C, SIGTERM, --duration) finishes the tick in flight, then
folds and finalizes; a fatal error (401/403, disk full) stops without losing finished ticks.

Ticks keep a fixed schedule (start + k × interval): each tick's polls have a deadline inside
its own interval, and whatever has not answered by then is a ``timeout`` gap, so one slow
tick (a starved CPU, hanging kubelets) never pushes the next ones late.  A recorder that
stops before its first tick leaves the disk as it found it: no empty recording blocks the
retry.  SIGHUP (the terminal closed) stops like SIGTERM: the recording is finalized.

With ``--kubelet-direct`` the pods come from each kubelet's ``/pods``, fetched beside the
summaries rather than after them, and not cut off by the tick's deadline: a slow kubelet's
list lands in a later tick instead of being dropped.  A tick whose node has no fresh list says
so in its ``ticks`` row (``pods stale: …`` / ``pods missing: …``, FORMAT.md §4), and every
such tick and every failed fetch is counted (status line, manifest counts, ``info``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import orjson

from kube.errors import CredentialError, RecorderError, RecordingError

from ..format import Manifest
from ..redact import EVENT_REASONS
from ..writer import RecordingWriter, Tick
from . import PODS_MISSING, PODS_STALE, rolling
from .client import KubeClient, RequestFailed
from .health import HealthServer
from .hooks import RecorderHooks, call_hooks, stored_tick
from .metrics import RecorderMetrics, Window
from .options import RecordOptions, options_from_args
from .poller import NodeTarget, PollResult, poll_nodes, poll_one
from .rbac import rbac_text
from .status import StatusLine
from .watch import ListWatcher

LIST_WAIT = 30.0  # longest wait for the first pod/event lists before tick 0
POLL_SHARE = 0.9  # share of an interval a tick's polls may take; the rest is for writing it
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # each finishes the tick, then finalizes


@dataclass
class PodsFetch:
    """--kubelet-direct: one node's ``/pods`` fetch, which may outlive the tick that started it."""

    task: asyncio.Task[None] | None = None
    fresh: bool = False  # a good list came in since the node's last tick
    last_good_tick: int | None = None  # the last tick that had a fresh list
    problem: str | None = None  # why the last fetch failed


def run_record(args: argparse.Namespace) -> int:
    if args.print_rbac:
        print(rbac_text(), end="")
        return 0
    if getattr(args, "print_manifests", False):
        from .manifests import manifests_from_args

        print(manifests_from_args(args), end="")
        return 0
    opts = options_from_args(args)
    return asyncio.run(Recorder(opts).run())


class Recorder:
    def __init__(
        self,
        opts: RecordOptions,
        transport: httpx2.AsyncBaseTransport | None = None,
        *,
        hooks: Sequence[RecorderHooks] = (),
    ) -> None:
        self.opts = opts
        self.transport = transport  # tests: httpx2.MockTransport instead of the network
        self.hooks = tuple(hooks)  # told of each committed tick (hooks.py: the flight recorder's seam)
        self.root = Path(opts.output)
        self.targets: dict[str, NodeTarget] = {}
        self.fatal: BaseException | None = None
        self.stop = asyncio.Event()
        self.configz_due: set[str] = set()
        self.kubelet_pods: dict[str, dict[str, dict[str, Any]]] = {}
        self.pods_fetches: dict[str, PodsFetch] = {}
        self._pods_gate: asyncio.Semaphore | None = None
        self.writer: RecordingWriter | None = None
        self.status: StatusLine | None = None
        self.metrics = RecorderMetrics(self.root, window=self._window)  # --listen's /metrics; flight/ adds incidents
        self.listener: HealthServer | None = None

    # -- objects from watches -------------------------------------------------------------
    def on_object(self, kind: str, obj: dict[str, Any], deleted: bool) -> None:
        assert self.writer is not None
        if kind == "node":
            name = (obj.get("metadata") or {}).get("name")
            if not name or (self.opts.node is not None and name != self.opts.node):
                return
            if deleted:
                self.targets.pop(name, None)
            elif name not in self.targets:
                self.targets[name] = NodeTarget.from_node(obj, self.opts.kubelet_port)
                self.configz_due.add(name)
            else:
                fresh = NodeTarget.from_node(obj, self.opts.kubelet_port)
                self.targets[name].address, self.targets[name].port = fresh.address, fresh.port
        elif (kind == "pod" and (obj.get("spec") or {}).get("nodeName") not in self.targets) or (
            kind == "event" and obj.get("reason") not in EVENT_REASONS
        ):
            return
        elif kind == "event" and self.opts.node is not None and (obj.get("source") or {}).get("host") != self.opts.node:
            return  # --node: the events of this node's kubelet only
        self.writer.observe(kind, obj, deleted=deleted)

    def _watch_task(self, watcher: ListWatcher, first_list_done: bool) -> asyncio.Task[None]:
        task = asyncio.create_task(watcher.run(need_list=not first_list_done))
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None and self.fatal is None:
            self.fatal = task.exception()
            self.stop.set()

    # -- per-tick work --------------------------------------------------------------------
    async def _fetch_configz(self, client: KubeClient, deadline: float) -> None:
        due = [self.targets[n] for n in sorted(self.configz_due) if n in self.targets]
        self.configz_due.clear()
        if not due:
            return
        assert self.writer is not None
        for res in await poll_nodes(client, due, "configz", concurrency=self.opts.concurrency, deadline=deadline):
            if res.body is None:
                self.configz_due.add(res.node)  # try again next tick
                continue
            try:
                self.writer.observe("configz", orjson.loads(res.body), node=res.node)
            except orjson.JSONDecodeError:
                continue

    def _kubelet_pods(self, res: PollResult) -> bool:
        """--kubelet-direct: diff the kubelet's /pods against the last poll of that node; False
        when the body is not a pod list."""
        assert self.writer is not None and res.body is not None
        try:
            items = orjson.loads(res.body).get("items") or []
        except (orjson.JSONDecodeError, AttributeError):
            return False
        if not isinstance(items, list):
            return False
        now = {str((p.get("metadata") or {}).get("uid")): p for p in items if isinstance(p, dict)}
        before = self.kubelet_pods.get(res.node, {})
        for uid, pod in before.items():
            if uid not in now:
                self.writer.observe("pod", pod, node=res.node, deleted=True)
        for pod in now.values():
            self.writer.observe("pod", pod, node=res.node)
        self.kubelet_pods[res.node] = now
        return True

    # -- --kubelet-direct: /pods beside the summaries -----------------------------------------
    def _start_pods_fetches(self, client: KubeClient, deadline: float) -> list[asyncio.Task[None]]:
        """Start a ``/pods`` fetch for every node that has none running; returns those running.

        A fetch may run until the tick's deadline or for one ``--timeout``, whichever ends later:
        a kubelet slower than the interval still delivers its list, a tick or two late.
        """
        if self._pods_gate is None:
            self._pods_gate = asyncio.Semaphore(self.opts.concurrency)
        until = max(deadline, time.monotonic() + self.opts.timeout)
        running = []
        for name in sorted(self.targets):
            state = self.pods_fetches.setdefault(name, PodsFetch())
            if state.task is None or state.task.done():
                state.task = asyncio.create_task(self._fetch_pods(client, self.targets[name], until))
                state.task.add_done_callback(self._task_done)
            running.append(state.task)
        return running

    async def _fetch_pods(self, client: KubeClient, target: NodeTarget, deadline: float) -> None:
        assert self._pods_gate is not None and self.status is not None
        res = await poll_one(client, target, "pods", gate=self._pods_gate, deadline=deadline)
        state = self.pods_fetches[target.name]
        if res.body is not None and self._kubelet_pods(res):
            state.fresh, state.problem = True, None
            return
        state.problem = res.error or "the /pods response is not a pod list"
        self.status.counters.pods_failed += 1

    def _pods_note(self, node: str, tick: int, *, gap: bool = False) -> str | None:
        """None when ``node`` has a fresh pod list for ``tick``, else the note for its ticks row.

        A gap takes the fresh list as its own too (the next tick needs a newer one) but gets no
        note and no count: with no summary, the tick is no pass of the replay.
        """
        assert self.status is not None
        state = self.pods_fetches.get(node)
        if state is None:
            return None
        if state.fresh:
            state.fresh, state.last_good_tick = False, tick
            return None
        if gap:
            return None
        self.status.counters.pods_missed += 1
        running = state.task is not None and not state.task.done()
        why = "the request is still running" if running or state.problem is None else state.problem
        if state.last_good_tick is None:
            return f"{PODS_MISSING}: no /pods list from the kubelet yet ({why})"
        return f"{PODS_STALE}: no fresh /pods list ({why}); the pods are as listed at tick {state.last_good_tick}"

    async def _stop_pods_fetches(self) -> None:
        tasks = [s.task for s in self.pods_fetches.values() if s.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def tick(self, client: KubeClient, deadline: float) -> None:
        """Poll every node until ``deadline`` (monotonic); nodes without an answer are gaps."""
        assert self.writer is not None and self.status is not None
        started = time.monotonic()
        await client.refresh_credentials()  # an expired exec token is renewed outside the deadline
        pods = self._start_pods_fetches(client, deadline) if client.direct else []
        await self._fetch_configz(client, deadline)
        tick = self.writer.begin_tick()
        targets = [self.targets[n] for n in sorted(self.targets)]
        conc = self.opts.concurrency
        results = await poll_nodes(client, targets, "stats/summary", concurrency=conc, deadline=deadline)
        pending = [t for t in pods if not t.done()]
        if pending and deadline > time.monotonic():  # the lists get the summaries' time, not less
            await asyncio.wait(pending, timeout=deadline - time.monotonic())
        c = self.status.counters
        ok = failed = 0
        for res in results:
            if res.body is None:
                tick.add_gap(res.node, res.error or "no data")
                self._pods_note(res.node, tick.index, gap=True)
                failed += 1
                continue
            try:
                summary = orjson.loads(res.body)
                c.samples += tick.add_summary(res.node, summary, scraped=res.scraped)
                ok += 1
            except (orjson.JSONDecodeError, RecordingError) as exc:
                tick.add_gap(res.node, f"unusable summary: {exc}")
                self._pods_note(res.node, tick.index, gap=True)
                failed += 1
                continue
            if client.direct:
                note = self._pods_note(res.node, tick.index)
                if note is not None:
                    _note_row(tick, res.node, note)
            if self.opts.keep_raw:
                tick.add_raw(res.node, "stats/summary", res.body, observed=res.scraped)
            self._note_kubelet_start(res.node, summary)
        try:
            self.writer.commit(tick)
        finally:  # a fold that fails after the tick was journalled still kept the tick: count it
            if self.writer.last_tick == tick.index:
                c.ticks += 1
        self._tick_metrics(tick, started, deadline)
        if self.hooks:
            call_hooks(self.hooks, "tick_stored", stored_tick(self.root, tick))
        c.nodes_ok, c.nodes_failed = ok, failed
        c.gaps += failed
        self.status.update()

    def _note_kubelet_start(self, node: str, summary: dict[str, Any]) -> None:
        """A new kubelet startTime means a restart, and maybe a new config: re-read /configz."""
        for sc in (summary.get("node") or {}).get("systemContainers") or []:
            if isinstance(sc, dict) and sc.get("name") == "kubelet":
                start = sc.get("startTime")
                target = self.targets.get(node)
                if target is not None and start:
                    if target.kubelet_start is not None and target.kubelet_start != start:
                        self.configz_due.add(node)
                    target.kubelet_start = start

    # -- main loop ------------------------------------------------------------------------
    async def run(self) -> int:
        opts = self.opts
        beat = self._listen()  # a port in use ends here, before anything touches the disk
        client = KubeClient.build(opts, self.transport)
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self.stop.set)
        tasks: list[asyncio.Task[None]] = []
        outcome, code, disk_failed = "finished", 0, False
        try:
            await client.refresh_credentials()  # an interactive login happens before any deadline
            version = await self._server_version(client)
            manifest = Manifest(source="recorder", server_version=version, options=opts.manifest_options())
            resume = opts.append or opts.retain is not None  # --retain: a restarted pod resumes its recording
            self.writer = RecordingWriter(self.root, manifest, append=resume, retain=opts.retain)
            rolling.configure(self.writer, opts.retain, opts.interval)
            self.status = StatusLine(self.root, opts.status, pods=opts.kubelet_direct)
            sel = {"labelSelector": opts.nodes} if opts.nodes else {}
            if opts.node is not None:  # --node: this node's object only, not every node's updates
                sel["fieldSelector"] = f"metadata.name={opts.node}"
            # Every list+watch loop on a connection of its own (see client.py: a watch stream
            # idling on a shared HTTP/2 connection stalls the other responses on it).
            nodes = ListWatcher(client.dedicated(), "/api/v1/nodes", "node", self.on_object, selector=sel)
            try:
                await nodes.list_once()
            except RequestFailed as exc:
                raise RecorderError(f"cannot list nodes: {exc}", source=client.server) from None
            if not self.targets:
                what = "--node" if opts.node is not None else "--nodes" if opts.nodes else "cluster"
                raise RecordingError("no nodes match", source=what)
            tasks.append(self._watch_task(nodes, True))
            listing: list[ListWatcher] = []
            if opts.watch:
                if not opts.kubelet_direct:
                    listing.append(ListWatcher(client.dedicated(), "/api/v1/pods", "pod", self.on_object))
                listing.append(ListWatcher(client.dedicated(), "/api/v1/events", "event", self.on_object))
            tasks += [self._watch_task(w, False) for w in listing]
            await self._wait_for_lists(listing)
            listed = ["node"] + [w.kind for w in listing if w.kind == "pod" and w.synced.is_set()]
            rolling.resume(self.writer, self.targets, opts.interval, listed=listed)
            await self._loop(client)
        except RecorderError as exc:  # the cluster cannot be reached (1) or refused the credentials (3)
            outcome, code = "stopped", exc.exit_code
            print(f"evictlens record: {exc.one_line()}", file=sys.stderr)
        except RecordingError as exc:  # bad input before the writer exists (2), a failed write after (1)
            outcome, code, disk_failed = "stopped", 1 if self.writer is not None else 2, self.writer is not None
            if not self.targets and self.writer is not None and self.writer.ticks_written == 0:
                code = 2  # --node/--nodes matched no node: bad input, though the writer had opened
            print(f"evictlens record: {exc.one_line()}", file=sys.stderr)
        finally:
            self.metrics.not_ready("the recorder stopped" if code == 0 else "the recorder failed")
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._stop_pods_fetches()
            await client.close()
        if self.writer is None or self.writer.ticks_written == 0:
            self._discard()
            if code == 0:
                print("evictlens record: stopped before the first tick; nothing was recorded", file=sys.stderr)
        else:
            code, outcome = self._finish(code, outcome, disk_failed=disk_failed)
        self._stop_listening(beat)
        call_hooks(self.hooks, "stopped")
        return code

    def _discard(self) -> None:
        """No tick recorded: leave the disk as it was (a retry must not find an empty recording).

        Only the writer knows what this run created, because it looked under its lock: with no
        writer (its start failed and undid itself, or was refused) nothing here is ours to
        remove.  A look taken before the lock could be stale: another ``record`` may have
        created, or finished, a recording in the same directory meanwhile.
        """
        writer, self.writer = self.writer, None
        if self.status is not None:
            self.status.close()
        if writer is not None:
            writer.discard()

    async def _wait_for_lists(self, watchers: list[ListWatcher]) -> None:
        """Start ticking once the first lists are in, as informers wait for their caches.

        Tick 0 then has its pods, and a big first list (25 000 pods) does not compete with
        tick 0 for the one CPU the recorder has.  A list that keeps failing does not hold the
        recording back for more than ``LIST_WAIT`` seconds.
        """
        until = time.monotonic() + max(LIST_WAIT, self.opts.interval)
        while not all(w.synced.is_set() for w in watchers) and not self.stop.is_set() and time.monotonic() < until:
            await asyncio.sleep(0.02)

    async def _server_version(self, client: KubeClient) -> str | None:
        try:
            body = await client.get_json("/version", deadline=time.monotonic() + self.opts.timeout * 3)
        except RequestFailed as exc:
            refused = exc.refused_certificate
            if refused is None and not exc.tls and exc.status is None and self.transport is None:
                refused = await client.certificate_refusal()  # a bare ReadError: TLS 1.3's late alert?
            if refused is not None:
                raise CredentialError(refused, source=client.server) from None
            if exc.tls:
                hint = "check the cluster's certificate-authority and server address in the kubeconfig"
                raise RecordingError(f"{exc} ({hint})", source=client.server) from None
            raise RecorderError(f"cannot reach the API server: {exc}", source=client.server) from None
        version = body.get("gitVersion") if isinstance(body, dict) else None
        return version if isinstance(version, str) else None

    async def _loop(self, client: KubeClient) -> None:
        """Tick k starts at ``begin + k × interval`` and polls until ``POLL_SHARE`` of its slot.

        Only a slot more than half gone before its tick could start (the process was frozen,
        or writing took a whole interval) is skipped and counted late; the next tick then
        starts on its own slot, so the schedule holds.
        """
        interval = self.opts.interval
        begin = time.monotonic()
        end = begin + self.opts.duration if self.opts.duration else None
        slot = 0
        assert self.status is not None
        self.status.tick_started()
        while not self.stop.is_set():
            now = time.monotonic()
            behind = int((now - (begin + slot * interval)) / interval + 0.5)
            if behind > 0:
                self.status.counters.late_ticks += behind
                self.metrics.late(behind)
                slot += behind
                next_at = begin + slot * interval
                if end is not None and next_at >= end:
                    break
                if await self._wait_until(next_at):
                    break
            await self.tick(client, begin + (slot + POLL_SHARE) * interval)
            if self.fatal is not None:
                raise self.fatal
            slot += 1
            next_at = begin + slot * interval
            if end is not None and next_at >= end:
                break
            if await self._wait_until(next_at):
                break
        if self.fatal is not None:
            raise self.fatal

    # -- --listen: health and metrics ------------------------------------------------------
    def _listen(self) -> asyncio.Task[None] | None:
        """Bind --listen's server (RecordingError for a port in use) and start the loop's heartbeat."""
        if not self.opts.listen:
            return None
        stale = max(120.0, 10 * self.opts.interval + self.opts.timeout)
        self.listener = HealthServer.start(self.opts.listen, self.metrics, stale_after=stale)
        print(f"evictlens record: /metrics, /healthz, /readyz on {self.listener.address}", file=sys.stderr)
        return asyncio.create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        while True:
            self.metrics.heartbeat()
            await asyncio.sleep(1.0)

    def _stop_listening(self, beat: asyncio.Task[None] | None) -> None:
        if beat is not None:
            beat.cancel()
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def _tick_metrics(self, tick: Tick, started: float, deadline: float) -> None:
        """A committed tick's duration, its lag behind its slot and each gap's reason."""
        cols = tick.tables["ticks"]
        gaps = [err for ok, err in zip(cols["ok"], cols["error"], strict=True) if not ok]
        slot = deadline - POLL_SHARE * self.opts.interval
        self.metrics.tick_finished(duration=time.monotonic() - started, lag=started - slot, failures=gaps)
        if self.writer is not None:
            self.metrics.window_shrinks_now(self.writer.window_shrinks)

    def _window(self) -> Window | None:
        """The ticks the recording keeps (the writer's window, read on the server thread)."""
        writer = self.writer
        if writer is None:
            return None
        first, last = writer.window_first, writer.window_last
        return Window(None if first is None else first / 1e6, None if last is None else last / 1e6)

    async def _wait_until(self, when: float) -> bool:
        """Sleep until ``when`` (monotonic); True if told to stop meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), timeout=max(0.0, when - time.monotonic()))
        return self.stop.is_set()

    def _finish(self, code: int, outcome: str, *, disk_failed: bool) -> tuple[int, str]:
        assert self.writer is not None
        if not disk_failed:
            try:
                self.writer.finalize(counts=self._counts())
            except (RecordingError, OSError) as exc:
                text = exc.one_line() if isinstance(exc, RecordingError) else str(exc)
                print(
                    f"evictlens record: could not finalize ({text}); the journal holds every tick",
                    file=sys.stderr,
                )
                code, outcome = 1, "stopped"
                self.writer.close_after_failure()  # give the lock up: `record --append` or `info` may follow
        else:
            self.writer.close_after_failure()
        if self.status is not None:
            self.status.finish(outcome)
        return code, outcome

    def _counts(self) -> dict[str, int] | None:
        """The recorder's own counters for the manifest (FORMAT.md §2), beside the row counts."""
        if self.status is None:
            return None
        c = self.status.counters
        counts = {"late_ticks": c.late_ticks}
        if self.opts.kubelet_direct:
            counts |= {"pods_missed": c.pods_missed, "pods_fetch_failed": c.pods_failed}
        return counts


def _note_row(tick: Tick, node: str, note: str) -> None:
    """Put ``note`` in the ``error`` column of the ok row :meth:`Tick.add_summary` just added for ``node``."""
    cols = tick.tables["ticks"]
    assert cols["node"][-1] == node and cols["ok"][-1]
    cols["error"][-1] = note
