"""``evictlens replay``: a recording through the eviction manager, with a progress bar and a summary.

This module parses arguments and picks a renderer; the work is :mod:`replay.engine` and
:mod:`replay.collect`, the output the results model (``-o OUT`` writes it, ``--json`` prints
``result.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from kube.errors import InputError
from recordings.scratch import scratch_dir
from replay.cli.args import (
    add_counterfactual_argument,
    add_kubelet_arguments,
    add_speed_arguments,
    jobs_of,
    request_from_args,
)


def run_replay(args: argparse.Namespace) -> int:
    if args.sample:
        return _replay_sample(args)
    if not args.recording:
        raise InputError("give a recording directory, or --sample NAME for a bundled scenario", field="recording")
    return _replay(args, args.recording)


def _replay_sample(args: argparse.Namespace) -> int:
    """A bundled scenario generated (closed loop, as its own kubelet) into a temporary recording, then replayed."""

    from recordings.scenarios import load_bundled
    from replay.scenario import run_scenario

    if args.recording:
        raise InputError("give a recording or --sample, not both", field="--sample")
    with scratch_dir("evictlens-sample-") as tmp:
        run_scenario(load_bundled(args.sample), Path(tmp) / args.sample)
        return _replay(args, str(Path(tmp) / args.sample))


def _replay(args: argparse.Namespace, recording: str) -> int:
    from recordings.reader import open_recording
    from replay.engine import replay, select_nodes, total_passes
    from replay.progress import progress_bar
    from replay.results_io import to_json, write

    request = dataclasses.replace(request_from_args(args), counterfactual=args.counterfactual)
    rec = open_recording(recording, skip_bad=args.skip_bad)
    names = select_nodes(rec, args.node)  # the same errors, and --skip-bad's list, before any work
    with progress_bar("replaying", total_passes(rec, names), enabled=not args.json) as advance:
        (result,) = replay(
            rec, [request], names, jobs=jobs_of(args), ray=args.ray, reference=args.reference, progress=advance
        )
    if args.output:
        write(result, Path(args.output))
    if args.json:
        sys.stdout.buffer.write(to_json(result) + b"\n")
    else:
        from replay.replay_report import print_result

        print_result(result, output=args.output)
    return 0


def add_replay_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="run a recording through the eviction manager and compare with the real evictions",
        description="Replay a recording tick by tick through the kubelet's eviction manager, each node as its own "
        "kubelet version (or --kubelet-version). Each node's settings: --config/--configz if given, else its "
        "recorded /configz, else that version's defaults; every eviction flag given then replaces its field. "
        "The output states each node's effective settings and where each came from.",
        epilog="examples:\n  evictlens replay rec/\n  evictlens replay rec/ --kubelet-version 1.30 -o out/\n"
        "  evictlens replay rec/ --eviction-hard 'memory.available<500Mi' --eviction-pressure-transition-period 1m",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "recording", nargs="?", help="a recording directory written by evictlens record / import / scenario, e.g. rec/"
    )
    p.add_argument(
        "--sample",
        metavar="NAME",
        help="replay a bundled scenario instead (see evictlens scenario --list), e.g. sidecar-stress",
    )
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable), e.g. kind-worker")
    add_kubelet_arguments(p, per_node=True)
    add_counterfactual_argument(p)
    out = p.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write the results directory (result.json + Parquet, see replay/RESULTS.md), e.g. out/",
    )
    out.add_argument("--json", action="store_true", help="print result.json to stdout instead of tables")
    add_speed_arguments(p)
    p.add_argument(
        "--reference",
        action="store_true",
        help="use the per-tick reference path instead of the columnar engine (same results, slower)",
    )
    out.add_argument(
        "--skip-bad",
        action="store_true",
        help="replay what is readable of a damaged recording and list what was skipped",
    )
    p.set_defaults(func=run_replay)
