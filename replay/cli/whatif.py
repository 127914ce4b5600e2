"""``evictlens whatif REC``: one recording, several settings, one comparison table.

Arguments and rendering only; the variants are :mod:`replay.whatif`, the comparison
:mod:`replay.compare`. ``-o OUT`` writes ``OUT/variant-N/`` (each a results directory,
``replay/RESULTS.md``) plus ``compare.json`` and ``compare.parquet``, all or nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kube.errors import InputError
from replay.cli.args import (
    add_kubelet_arguments,
    add_speed_arguments,
    jobs_of,
    load_baseline,
    request_from_args,
)
from replay.kubelet.versions import profile
from replay.whatif import Change, Variant, variants


def run_whatif(args: argparse.Namespace) -> int:
    import orjson

    from recordings.reader import open_recording
    from replay.compare import compare, to_document
    from replay.engine import replay, select_nodes, total_passes
    from replay.progress import progress_bar

    variants = variants_from_args(args)
    rec = open_recording(args.recording, skip_bad=args.skip_bad)
    names = select_nodes(rec, args.node)
    label = f"what if ({len(variants)} variants)"
    with progress_bar(label, total_passes(rec, names), enabled=not args.json) as advance:
        results = replay(
            rec,
            [v.request for v in variants],
            names,
            jobs=jobs_of(args),
            ray=args.ray,
            reference=args.reference,
            progress=advance,
            frames=bool(args.output),
        )
    comparison = compare(results, rec)
    if args.output:
        from replay.whatif_report import write_output

        write_output(results, comparison, Path(args.output))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(to_document(comparison), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from replay.whatif_report import print_comparison

        print_comparison(comparison, output=args.output)
    return 0


def versions_from_arg(value: str | None) -> list[str]:
    """``1.30,1.32`` → ``["1.30", "1.32"]`` (repeats dropped)."""
    return list(dict.fromkeys(v.strip() for v in (value or "").split(",") if v.strip()))


def _one(flag: str, field: str, values: Sequence[str] | None, *, as_list: bool = True) -> list[Change]:
    return [Change(f"{flag}={v}", {field: (v,) if as_list else v}) for v in values or ()]


def _soft(args: argparse.Namespace) -> list[Change]:
    soft, grace = list(args.eviction_soft or ()), list(args.eviction_soft_grace_period or ())
    if not soft:
        return _one("--eviction-soft-grace-period", "eviction_soft_grace_period", grace)
    if len(grace) not in (0, 1, len(soft)):
        raise InputError(
            f"{len(soft)} --eviction-soft variants but {len(grace)} --eviction-soft-grace-period: give "
            "one grace period for all, or one per soft variant (paired by position)",
            field="--eviction-soft-grace-period",
        )
    out = []
    for i, s in enumerate(soft):
        g = grace[i] if len(grace) == len(soft) else (grace[0] if grace else None)
        label = f"--eviction-soft={s}" + (f" --eviction-soft-grace-period={g}" if g else "")
        out.append(Change(label, {"eviction_soft": (s,), "eviction_soft_grace_period": (g,) if g else ()}))
    return out


def _configs(args: argparse.Namespace) -> list[Change]:
    out = [Change(f"--config={c}", request={"baseline": load_baseline(config=c)}) for c in args.config or ()]
    out += [Change(f"--configz={c}", request={"baseline": load_baseline(configz=c)}) for c in args.configz or ()]
    return out


def variants_from_args(args: argparse.Namespace) -> list[Variant]:
    """The flags' dimensions (each occurrence of a settings flag is one value) → the variants (replay.whatif)."""
    versions = versions_from_arg(args.kubelet_version)
    common = request_from_args(argparse.Namespace(**{**vars(args), **dict.fromkeys(DIMENSIONS)}), label="")
    common = dataclasses.replace(common, counterfactual=not getattr(args, "as_recorded", False))
    gates = dict(common.feature_gates) or None
    for v in versions:
        profile(v, gates)  # an unknown version or gate fails before anything is read
    return variants(
        common,
        [
            _one("--eviction-hard", "eviction_hard", args.eviction_hard),
            _soft(args),
            _one("--eviction-minimum-reclaim", "eviction_minimum_reclaim", args.eviction_minimum_reclaim),
            _one(
                "--eviction-pressure-transition-period",
                "eviction_pressure_transition_period",
                args.eviction_pressure_transition_period,
                as_list=False,
            ),
            _configs(args),
            [Change(f"kubelet {v}", request={"kubelet_version": v}) for v in versions],
        ],
    )


DIMENSIONS = (
    "eviction_hard",
    "eviction_soft",
    "eviction_soft_grace_period",
    "eviction_minimum_reclaim",
    "eviction_pressure_transition_period",
    "config",
    "configz",
    "kubelet_version",
)
"""The flags whose every occurrence is a variant; the rest apply to every variant but the baseline."""


def add_whatif_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "whatif",
        help="replay one recording under several settings and compare who is evicted, and when",
        description="Replay one recording under several settings and compare them in one table. Variant 0 is "
        "always the recorded settings (each node's /configz and kubeletVersion). Each occurrence of "
        "--eviction-hard, --eviction-soft (paired with --eviction-soft-grace-period by position), "
        "--eviction-minimum-reclaim, --eviction-pressure-transition-period or --config/--configz is one variant; "
        "--kubelet-version takes a comma-separated list; when several are given the variants are their product. "
        "--feature-gates, --eviction-max-pod-grace-period and the filesystem flags apply to every variant but "
        "the baseline. Every variant gives the counterfactual answer (a pod it evicts stops using anything; "
        "--as-recorded for the open loop); on a scenario recording a variant whose settings differ from the "
        "generating ones is regenerated closed-loop from the scenario (exact). The table says per variant until "
        "when its answer is as recorded.",
        epilog="examples:\n"
        "  evictlens whatif rec/ --eviction-hard 'memory.available<100Mi' --eviction-hard 'memory.available<500Mi'\n"
        "  evictlens whatif rec/ --kubelet-version 1.30,1.32\n"
        "  evictlens whatif rec/ --eviction-hard 'memory.available<1Gi' --kubelet-version 1.30,1.32 -o out/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("recording", help="a recording directory written by evictlens record / import / scenario, e.g. rec/")
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable), e.g. kind-worker")
    add_kubelet_arguments(p, per_node=True, variants=True)
    loop = p.add_argument_group("what a pod the variant evicts does afterwards")
    loop.add_argument(
        "--as-recorded",
        action="store_true",
        help="open loop: every pod keeps its recorded usage after the variant evicts it (the question "
        "'would the kubelet start evicting?'); default: the counterfactual answer, the evicted pod's "
        "usage taken off its node (replay/COUNTERFACTUAL.md)",
    )
    loop.add_argument(
        "--counterfactual",
        action="store_true",
        help="accepted for scripts, no effect: the counterfactual answer is the default",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write OUT/variant-N/ (results directories, see replay/RESULTS.md) plus compare.json and "
        "compare.parquet, e.g. out/",
    )
    out.add_argument("--json", action="store_true", help="print compare.json to stdout instead of tables")
    out.add_argument(
        "--skip-bad",
        action="store_true",
        help="replay what is readable of a damaged recording and list what was skipped",
    )
    add_speed_arguments(p)
    p.add_argument(
        "--reference",
        action="store_true",
        help="use the per-tick reference path instead of the columnar engine (same results, slower)",
    )
    p.set_defaults(func=run_whatif)
