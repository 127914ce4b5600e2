"""``evictlens watch``: who goes next, now — JSON lines on each change that matters, ``/metrics`` with ``--listen``.

Registered as a command plugin (``[project.entry-points."evictlens.commands"]``). This module only parses the
arguments and picks the source; the loop is live/watch.py, the lines live/jsonl.py, the metrics live/metrics.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

SUMMARY = "follow a cluster, a recording being written or a played sample: JSON lines before the kubelet acts"

_CLUSTER_FLAGS = (
    "kubeconfig",
    "context",
    "nodes",
    "interval",
    "duration",
    "kubelet_direct",
    "kubelet_port",
    "kubelet_ca",
    "concurrency",
    "timeout",
    "http1",
)


def run_watch(args: argparse.Namespace) -> int:
    from kube.duration import parse_duration_seconds
    from kube.errors import InputError

    if args.print_rbac:
        from recordings.recorder.rbac import rbac_text

        print(rbac_text(), end="")
        return 0
    warn = parse_duration_seconds(args.warn, flag="--warn")
    poll = parse_duration_seconds(args.poll, flag="--poll")
    cluster = [f"--{f.replace('_', '-')}" for f in _CLUSTER_FLAGS if getattr(args, f) not in (None, False)]
    sample_only = [f"--{f}" for f in _scenario_flag_names() if getattr(args, f.replace("-", "_")) is not None]
    if args.speed is not None:
        sample_only.insert(0, "--speed")
    if args.recording and args.sample:
        raise InputError("give a recording REC or --sample NAME, not both", field="--sample")
    if (args.recording or args.sample) and cluster:
        raise InputError(
            f"{cluster[0]} is for a live cluster; not with a recording or --sample",
            field=cluster[0],
        )
    if sample_only and not args.sample:
        raise InputError("takes effect only with --sample NAME", field=sample_only[0])
    if args.follow and not args.recording:
        raise InputError(
            "follows a recording being written: give its directory, e.g. watch rec/ --follow",
            field="--follow",
        )
    if args.recording and not args.follow:
        raise InputError(
            "watch follows a recording as it is written: add --follow (a finished recording: evictlens replay or tui)",
            field="REC",
        )
    from .watch import WatchOptions

    opts = WatchOptions(warn_seconds=warn, poll_seconds=poll, announce=bool(args.recording))
    return asyncio.run(_run(args, opts))


def _scenario_flag_names() -> tuple[str, ...]:
    from replay.scenario_cli import EVICTION_FLAGS

    return ("kubelet-version", *EVICTION_FLAGS)


async def _run(args: argparse.Namespace, opts: Any) -> int:
    from .metrics import LiveCollector, MetricsServer
    from .sources import (
        ClusterSource,
        FollowSource,
        SampleSource,
        Source,
        forwarded_record_flags,
    )
    from .watch import install_stop, watch

    stop = asyncio.Event()
    started: list[Source] = []
    install_stop(stop, started)  # first: a signal during start-up still ends the watch with its clean-up
    collector = LiveCollector()
    server = MetricsServer(args.listen, collector) if args.listen else None
    source: Source
    try:
        if args.recording:
            source = FollowSource(Path(args.recording))
        elif args.sample:
            source = SampleSource(_player_factory(args))
        else:
            cluster = ClusterSource(forwarded_record_flags(args))
            try:
                await cluster.preflight()
            except BaseException:
                cluster.close()
                raise
            if stop.is_set():
                cluster.close()
                return 0
            cluster.start()  # record's recorder puts its own signal handlers in place: a signal finalizes it
            source = cluster
            stop = asyncio.Event()  # ... and the watch reads the recording to its end
        started.append(source)
        if server is not None:
            print(f"evictlens watch: serving /metrics on port {server.port}", file=sys.stderr, flush=True)
        try:
            await watch(source, opts, sys.stdout.buffer, collector=collector, stop=stop)
            if isinstance(source, FollowSource) and not stop.is_set() and not _finalized(source.root):
                print(
                    f"evictlens watch: {source.root}: its writer stopped without finishing (no live process holds "
                    "writer.lock): the watch ends at the last tick it wrote",
                    file=sys.stderr,
                    flush=True,
                )
            if isinstance(source, SampleSource) and source.error() is not None:
                raise source.error()  # type: ignore[misc]
            if isinstance(source, ClusterSource):
                return source.exit_code()
            return 0
        finally:
            source.close()
    finally:
        if server is not None:
            server.close()


def _finalized(root: Path) -> bool:
    from recordings import format as fmt

    try:
        return fmt.Manifest.from_json((root / fmt.MANIFEST).read_bytes(), source=str(root)).finalized
    except (OSError, ValueError):
        return False


def _player_factory(args: argparse.Namespace) -> Any:
    from replay.scenario_cli import kubelet_flags

    from .play import ScenarioPlayer, load_sample, parse_speed

    speed = parse_speed(args.speed or "10")
    flags = kubelet_flags(args)
    scenario = load_sample(args.sample, kubelet_version=args.kubelet_version, kubelet_flags=flags)
    return lambda out, hold: ScenarioPlayer(
        scenario,
        out,
        speed=speed,
        kubelet_flags=flags,
        kubelet_version=args.kubelet_version,
        hold_first=hold,
    )


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "watch",
        help=SUMMARY,
        description="Follow a live cluster (as record: --context/--kubeconfig, the same access paths and RBAC, "
        "recorded into a private temporary directory removed at exit), a recording being written (REC --follow) "
        "or a bundled scenario played in accelerated real time (--sample NAME --speed N), and print one JSON line "
        "per change that matters: a node enters or leaves pressure, the pod next to go changes, a forecast drops "
        "under --warn, a real eviction or kernel kill arrives, a node stops answering (stale) or answers again. "
        "--listen serves the same as Prometheus /metrics. The line schema and metric names are in the README "
        "(Live).",
        epilog="examples:\n"
        "  evictlens watch --sample jvm-spike --speed 10\n"
        "  evictlens watch rec/ --follow --warn 5m\n"
        "  evictlens watch --context prod --listen :9101 > changes.jsonl\n"
        "  evictlens watch --print-rbac\n\n"
        "Exit status: 0 done (the sample played, the followed writer finished, Ctrl-C), 1 the recorder could not go\n"
        "on or an unexpected error, 2 bad input (a flag, no cluster reachable, a recording nobody writes),\n"
        "3 credentials refused by the cluster.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "recording",
        nargs="?",
        metavar="REC",
        help="a recording directory (with --follow: being written)",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="follow REC as it is written (by record or the flight recorder); refused when no live process writes it",
    )
    p.add_argument(
        "--sample",
        metavar="NAME",
        help="play a bundled scenario (evictlens scenario --list) or a "
        "scenario file in real time, e.g. --sample jvm-spike",
    )
    p.add_argument(
        "--speed",
        metavar="N",
        help="with --sample: times real time (default 10; max: no waiting), e.g. --speed 10",
    )
    p.add_argument(
        "--warn",
        default="10m",
        metavar="DURATION",
        help="report a forecast that reaches a threshold within this long, a Go duration (default 10m), e.g. --warn 5m",
    )
    p.add_argument(
        "--listen",
        metavar="ADDR",
        help="serve Prometheus /metrics on [HOST]:PORT, e.g. --listen :9101",
    )
    p.add_argument(
        "--poll",
        default="250ms",
        metavar="DURATION",
        help="how often to look for new ticks (default 250ms)",
    )
    p.add_argument(
        "--kubelet-version",
        metavar="VERSION",
        help="with --sample: run the scenario's nodes as this kubelet version, e.g. 1.32",
    )
    from replay.scenario_cli import EVICTION_FLAGS

    for name in EVICTION_FLAGS:
        p.add_argument(
            f"--{name}",
            metavar="VALUE",
            help="with --sample: replaces its field in every node's kubelet, as with scenario",
        )
    live = p.add_argument_group("live cluster (as evictlens record)")
    live.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file, as with kubectl")
    live.add_argument(
        "--context",
        metavar="NAME",
        help="kubeconfig context (default: current-context)",
    )
    live.add_argument(
        "--nodes",
        metavar="SELECTOR",
        help="label selector choosing the nodes, e.g. pool=batch",
    )
    live.add_argument("--interval", metavar="DURATION", help="time between ticks (default 10s)")
    live.add_argument(
        "--duration",
        metavar="DURATION",
        help="stop after this long (default: until Ctrl-C)",
    )
    live.add_argument(
        "--kubelet-direct",
        action="store_true",
        help="talk to each kubelet's port 10250 (see --print-rbac)",
    )
    live.add_argument("--kubelet-port", type=int, metavar="PORT", help="override the kubelet port")
    live.add_argument(
        "--kubelet-ca",
        metavar="FILE",
        help="CA bundle for kubelet serving certificates",
    )
    live.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="parallel summary requests (default 32)",
    )
    live.add_argument("--timeout", metavar="DURATION", help="per-request timeout (default 5s)")
    live.add_argument("--http1", action="store_true", help="HTTP/1.1 even where HTTP/2 is offered")
    live.add_argument(
        "--print-rbac",
        action="store_true",
        help="print the ClusterRole each access path needs (as record --print-rbac) and exit",
    )
    p.set_defaults(func=run_watch)
