"""``evictlens record``: the recorder with the flight recorder on it (incidents, webhook), registered as a command
plugin (``[project.entry-points."evictlens.commands"]``), so the core never names ``flight``.

Every flag of the plain recorder (recordings/recorder/options.py) is here unchanged; ``python -m recordings.cli
record`` stays the plain recorder.
"""

from __future__ import annotations

import argparse
from typing import Any

SUMMARY = "record a live cluster; every real eviction or kernel kill comes out explained (incidents)"

DEFAULT_WINDOW = "30m,5m"
DEFAULT_MAX_INCIDENTS = 100
DEFAULT_MAX_SIZE = "1Gi"


def parse_incident_window(text: str, *, interval_s: float) -> tuple[float, float]:
    """``30m,5m`` → (before, after) seconds; one line naming ``--incident-window`` otherwise."""
    from kube.duration import parse_duration
    from kube.errors import InputError

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InputError(
            f"expected BEFORE,AFTER as two Go durations, e.g. 30m,5m, got {text!r}", field="--incident-window"
        )
    try:
        before, after = (parse_duration(p) / 1e9 for p in parts)
    except InputError as exc:
        raise InputError(f"{exc.problem} (expected BEFORE,AFTER, e.g. 30m,5m)", field="--incident-window") from None
    if before < interval_s or after < 0:
        raise InputError(
            f"the before-window ({parts[0]}) must be at least one --interval ({interval_s:g}s) and the after-window "
            f"({parts[1]}) not negative, e.g. 30m,5m",
            field="--incident-window",
        )
    return before, after


def flight_options(args: argparse.Namespace, interval_s: float) -> Any:
    from kube.errors import InputError
    from kube.quantity import Quantity

    from .recorder import FlightOptions
    from .webhook import check_url

    before, after = parse_incident_window(args.incident_window, interval_s=interval_s)
    if args.max_incidents < 1:
        raise InputError(f"expected a positive number of incidents, got {args.max_incidents}", field="--max-incidents")
    try:
        size = int(Quantity.parse(args.max_incidents_size).int_value())
    except (InputError, ValueError):
        raise InputError(
            f"expected a size such as 1Gi or 500Mi, got {args.max_incidents_size!r}", field="--max-incidents-size"
        ) from None
    if size <= 0:
        raise InputError("expected a positive size such as 1Gi", field="--max-incidents-size")
    if args.webhook:
        check_url(args.webhook)
    return FlightOptions(before, after, args.max_incidents, size, args.webhook)


def run(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from recordings.recorder.main import Recorder, run_record
    from recordings.recorder.options import options_from_args

    if args.print_rbac or getattr(args, "print_manifests", False) or args.no_incidents:
        return run_record(args)
    opts = options_from_args(args)
    flight = flight_options(args, opts.interval)
    from .recorder import FlightRecorder

    hook = FlightRecorder(Path(opts.output), flight)
    recorder = Recorder(opts, hooks=[hook])
    hook.attach_metrics(getattr(recorder, "metrics", None))
    try:
        return asyncio.run(recorder.run())
    finally:
        if hook.webhook is not None:
            hook.webhook.close(wait_s=0.1)


def add_parser(sub: Any) -> None:
    from recordings.recorder.options import EXIT_STATUS, add_record_arguments

    p: argparse.ArgumentParser = sub.add_parser(
        "record",
        help=SUMMARY,
        description="Poll every node's Summary API (and list/watch pods, nodes and events) into a crash-safe "
        "recording until Ctrl-C or --duration. Every real Evicted event, OOMKilled container and SystemOOM it "
        "stores becomes an incident under DIR/incidents/: the node's window around it packed, and the engine's "
        "explanation (report.txt, report.json), out one tick after it is stored. Credentials come from "
        "--kubeconfig/--context as with kubectl. Example: %(prog)s -o rec --interval 10s --webhook https://hooks.example/x",
        epilog="Ctrl-C, SIGTERM and SIGHUP (a closed terminal) finish the tick in flight and finalize the recording. "
        + EXIT_STATUS
        + " A webhook that cannot be reached is logged and counted; it never stops the recording.",
    )
    add_record_arguments(p)
    g = p.add_argument_group("incidents (the flight recorder)")
    g.add_argument(
        "--incident-window",
        default=DEFAULT_WINDOW,
        metavar="BEFORE,AFTER",
        help=f"what each incident keeps around it, two Go durations (default {DEFAULT_WINDOW}); the report comes out "
        "at once, the pack is made again once AFTER has passed, e.g. --incident-window 1h,10m",
    )
    g.add_argument(
        "--max-incidents",
        type=int,
        default=DEFAULT_MAX_INCIDENTS,
        metavar="N",
        help=f"incidents kept under DIR/incidents, the oldest dropped first (default {DEFAULT_MAX_INCIDENTS}), "
        "e.g. --max-incidents 20",
    )
    g.add_argument(
        "--max-incidents-size",
        default=DEFAULT_MAX_SIZE,
        metavar="SIZE",
        help=f"bytes the incidents may take, the oldest dropped first (default {DEFAULT_MAX_SIZE}), "
        "e.g. --max-incidents-size 200Mi",
    )
    g.add_argument(
        "--webhook",
        metavar="URL",
        help="POST each incident's report.json here (retried with back-off; credentials in the URL become a Basic "
        "Authorization header and never appear in the log), e.g. --webhook https://hooks.example/evictlens",
    )
    g.add_argument(
        "--no-incidents",
        action="store_true",
        help="record only, as python -m recordings.cli record does, e.g. --no-incidents",
    )
    p.set_defaults(func=run, command="record")
