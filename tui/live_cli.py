"""``evictlens tui --live`` and ``evictlens tui REC --follow``: the flags and the checks made before the screen
goes full (a bad flag, a recording nobody writes, a cluster out of reach: one line, exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

CLUSTER_FLAGS = ("kubeconfig", "context", "nodes", "interval", "kubelet_direct")
"""``record``'s flags ``tui --live`` passes on to the in-process recorder (they mean what they mean to record)."""


def add_live_arguments(p: argparse.ArgumentParser) -> None:
    live = p.add_argument_group(
        "live",
        "follow what the kubelet would do now and soon: a cluster (--live, recorded as record does into a private "
        "temporary directory), a recording being written (REC --follow) or a played sample (--live --sample NAME)",
    )
    live.add_argument("--live", action="store_true", help="follow a live cluster (or --sample NAME) as it goes")
    live.add_argument(
        "--follow",
        action="store_true",
        help="follow REC as record or the flight recorder writes it (refused otherwise)",
    )
    live.add_argument("--sample", metavar="NAME", help="with --live: play a bundled scenario, e.g. --sample jvm-spike")
    live.add_argument("--speed", metavar="N", help="with --sample: times real time (default 10; max: no waiting)")
    live.add_argument(
        "--warn",
        metavar="DURATION",
        help="live: a forecast that reaches a threshold within this long is a warning (default 10m), e.g. --warn 5m",
    )
    live.add_argument("--kubeconfig", metavar="FILE", help="with --live: as record --kubeconfig")
    live.add_argument("--context", metavar="NAME", help="with --live: as record --context, e.g. --context kind-kind")
    live.add_argument("--nodes", metavar="SELECTOR", help="with --live: as record --nodes, e.g. --nodes pool=batch")
    live.add_argument("--interval", metavar="DURATION", help="with --live: as record --interval (default 10s)")
    live.add_argument("--kubelet-direct", action="store_true", help="with --live: as record --kubelet-direct")


def wants_live(args: argparse.Namespace) -> bool:
    """Any live flag given: the live view (or one line saying what is wrong with the flags)."""
    return bool(
        args.live
        or args.follow
        or args.sample
        or args.speed
        or args.warn
        or any(getattr(args, f) not in (None, False) for f in CLUSTER_FLAGS)
    )


def check_flags(args: argparse.Namespace) -> None:
    from kube.errors import InputError

    cluster = [f"--{f.replace('_', '-')}" for f in CLUSTER_FLAGS if getattr(args, f) not in (None, False)]
    if args.follow and args.live:
        raise InputError(
            "follows a recording REC; --live follows a cluster or a sample: one or the other", field="--follow"
        )
    if args.follow and not args.target:
        raise InputError(
            "follows a recording being written: give its directory, e.g. tui rec/ --follow", field="--follow"
        )
    given = [f"--{f}" for f in ("live", "sample", "speed", "warn") if getattr(args, f)] + cluster
    if args.target and not args.follow:
        raise InputError("is live; a recording being written needs --follow (tui REC --follow)", field=given[0])
    if args.sample and not args.live:
        raise InputError(
            "plays a sample in the live view: add --live (tui --live --sample jvm-spike)", field="--sample"
        )
    if args.speed and not args.sample:
        raise InputError("takes effect only with --live --sample NAME", field="--speed")
    if cluster and not args.live:
        raise InputError("is for a live cluster: add --live", field=cluster[0])
    if not (args.live or args.follow):
        raise InputError("is for the live view: add --live (or follow a recording: tui REC --follow)", field=given[0])
    if cluster and args.sample:
        raise InputError("is for a live cluster; not with --sample", field=cluster[0])


def run_live(args: argparse.Namespace, export_dir: Path | None, jobs: int, interactive: Any) -> int:
    """Check the flags and the source, then (on a terminal) the live view; ``interactive()`` raises the
    one line when stdin/stdout are not a terminal."""
    from kube.duration import parse_duration_seconds
    from tui.live_app import LiveApp, live_engine
    from tui.live_source import LiveSource, cluster_source, follow_source, sample_source

    check_flags(args)
    warn = parse_duration_seconds(args.warn or "10m", flag="--warn")
    source: LiveSource
    if args.follow:
        source = follow_source(Path(args.target))
        interactive()
    elif args.sample:
        from live.play import load_sample, parse_speed

        parse_speed(args.speed or "10")
        load_sample(args.sample)  # a name that is no bundled scenario nor a file: one line, before the screen
        interactive()
        source = sample_source(args.sample, args.speed)
    else:
        forwarded = _forwarded(args)
        source = cluster_source(forwarded)
        try:
            interactive()
        except BaseException:
            source.close()
            raise
    app = LiveApp(source, engine=live_engine(warn), export_dir=export_dir, jobs=jobs)
    try:
        status = app.run()
    finally:
        source.stop()
        source.close()
    return int(app.return_code or status or 0)


def _forwarded(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    for flag in CLUSTER_FLAGS:
        value = getattr(args, flag)
        if value is True:
            out.append(f"--{flag.replace('_', '-')}")
        elif value not in (None, False):
            out += [f"--{flag.replace('_', '-')}", str(value)]
    return out
