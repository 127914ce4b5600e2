"""``evictlens tune REC|SCENARIO``: search eviction settings, recommend one the kernel does not beat.

Arguments and rendering only; the search is :mod:`replay.tune`, the table and files :mod:`replay.tune_report`.
Exit 0: a recommendation; 1: no candidate has 0 kernel kills (a finding); 2: bad input.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kube.errors import EXIT_FINDING, EXIT_OK, InputError
from recordings.scratch import scratch_dir
from replay.cli.args import add_speed_arguments, gates_from_args, jobs_of
from replay.settings import SettingsRequest
from replay.tune import DEFAULTS, FLAGS, MAX_CANDIDATES

if TYPE_CHECKING:
    from recordings.reader import Recording


def open_input(text: str, stack: ExitStack) -> Recording:
    """A recording directory, a scenario file, or a bundled scenario's name; a scenario is generated with its own
    settings into a temporary recording that keeps it, so every candidate regenerates from it closed-loop."""
    from recordings.reader import open_recording

    path = Path(text)
    if path.is_dir():
        return open_recording(path)
    if path.is_file():
        from recordings.scenarios import load_scenario

        scenario = load_scenario(path)
    else:
        from recordings.scenarios import bundled_names, load_bundled

        if text not in bundled_names():
            raise InputError(
                "no such recording directory, scenario file or bundled scenario (evictlens scenario --list)",
                source=text,
                field="REC|SCENARIO",
            )
        scenario = load_bundled(text)
    from replay.scenario import run_scenario

    where = Path(stack.enter_context(scratch_dir("evictlens-tune-"))) / scenario.name
    run_scenario(scenario, where)
    return open_recording(where)


def replay_hint(text: str) -> str:
    """How to replay the recommended snippet on what was tuned."""
    path = Path(text)
    if path.is_dir():
        return f"evictlens replay {text} --config FILE"
    if path.is_file():
        return f"evictlens scenario {text} -o REC, then evictlens replay REC --config FILE"
    return f"evictlens replay --sample {text} --config FILE"


def run_tune(args: argparse.Namespace) -> int:
    import orjson

    from replay.engine import select_nodes, total_passes
    from replay.progress import progress_bar
    from replay.scenario import generated_with
    from replay.tune import parse_space, search, to_document
    from replay.tune_report import print_outcome, recommended_snippet, write_output

    # bad flags fail before any reading, and before a range or grid past --max-candidates is built
    space, given = parse_space({key: getattr(args, key) for key in FLAGS}, limit=args.max_candidates)
    gates = gates_from_args(args)
    common = SettingsRequest(kubelet_version=args.kubelet_version, feature_gates=dict(gates or {}))
    with ExitStack() as stack:
        rec = open_input(args.recording, stack)
        names = select_nodes(rec, args.node)
        closed = generated_with(rec) is not None
        if closed:
            from replay.tune import grid, sample

            label, total = (
                "tune: regenerating candidates",
                len(sample(grid(space), args.max_candidates, args.seed)[0]) + 1,
            )
        else:
            label, total = f"tune: replaying up to {args.max_candidates} candidates", total_passes(rec, names)
        with progress_bar(label, total, enabled=not args.json) as advance:
            outcome = search(
                rec,
                space,
                names=names,
                common=common,
                max_candidates=args.max_candidates,
                seed=args.seed,
                jobs=jobs_of(args),
                ray=args.ray,
                frames=bool(args.output),
                progress=advance,
                reserved_given=bool({FLAGS["kube_reserved"], FLAGS["system_reserved"]} & set(given)),
            )
        if args.output:
            write_output(outcome, Path(args.output))
        if args.json:
            doc = to_document(outcome, recommended_snippet(outcome))
            sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        else:
            print_outcome(outcome, output=args.output, replay_as=replay_hint(args.recording))
    return EXIT_OK if outcome.recommended is not None else EXIT_FINDING


def add_tune_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tune",
        help="search eviction settings for a workload and recommend ones the kernel's OOM killer does not beat",
        description="Search eviction settings for the workload of a recording or a scenario and recommend a "
        "KubeletConfiguration with 0 kernel OOM kills. Each candidate sets evictionHard (memory.available, "
        "nodefs.available, the other signals at the kubelet's defaults), an optional soft memory threshold with "
        "its grace period, evictionMinimumReclaim and evictionMaxPodGracePeriod (and, on scenarios, kube/system "
        "reserved memory). Each search flag takes a comma-separated list (none = not set) or a range FROM..TO/COUNT. "
        "A scenario (a bundled name, a scenario file or a recording written by evictlens scenario) is "
        "regenerated closed-loop per candidate: exact, kernel kills modelled. Any other recording gives the "
        "counterfactual answer, valid per node until its horizon ('as recorded until'); there the kernel kills "
        "are the recorded ones the candidate did not prevent, and 'OOM risk' counts the moments memory fell from "
        "above the candidate's hard threshold to exhaustion between two passes. Only candidates with 0 kills "
        "(and 0 risk) are recommended: the Pareto front of evictions, pods that will not come back, node time "
        "under pressure and memory withheld from pods is printed, the current settings' row first. "
        "Exit status: 0 a recommendation, 1 none with 0 kernel kills, 2 bad input.",
        epilog="examples:\n"
        "  evictlens tune jvm-spike\n"
        "  evictlens tune rec/ --memory-hard 100Mi,500Mi,5%,10% --memory-soft none,20% --soft-grace 30s,1m30s\n"
        "  evictlens tune scenario.yaml --memory-hard 5%..15%/3 --system-reserved none,512Mi,1Gi -o out/\n"
        "  evictlens replay rec/ --config out/recommended.yaml   # the recommendation, replayed",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "recording",
        metavar="REC|SCENARIO",
        help="a recording directory, a scenario file (YAML) or a bundled scenario's name (evictlens scenario --list)",
    )
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable)")
    space = p.add_argument_group(
        "search space", "Each: a comma-separated list, or FROM..TO/COUNT (COUNT values evenly, both ends included)."
    )
    helps = {
        "memory_hard": "evictionHard memory.available: quantities or percentages of capacity",
        "nodefs_hard": "evictionHard nodefs.available",
        "soft": "evictionSoft memory.available ('none': no soft threshold; one at or below the hard one is skipped)",
        "soft_grace": "evictionSoftGracePeriod for the soft threshold: Go durations",
        "min_reclaim": "evictionMinimumReclaim memory.available ('none': not set)",
        "max_pod_grace": "evictionMaxPodGracePeriod, seconds",
        "kube_reserved": "kubeReserved memory, scenarios only ('none': not set)",
        "system_reserved": "systemReserved memory, scenarios only ('none': not set)",
    }
    for key, flag in FLAGS.items():
        metavar = "SECONDS" if key == "max_pod_grace" else ("DURATIONS" if key == "soft_grace" else "VALUES")
        space.add_argument(
            flag,
            dest=key,
            metavar=metavar,
            default=None,
            help=f"{helps[key]} (default: {DEFAULTS[key]})".replace("%", "%%"),
        )
    space.add_argument(
        "--max-candidates",
        type=int,
        default=MAX_CANDIDATES,
        metavar="N",
        help="replay at most N candidates; a larger grid is sampled uniformly, said in the output "
        f"(default {MAX_CANDIDATES})",
    )
    space.add_argument("--seed", type=int, default=0, metavar="N", help="the sample's seed (default 0)")
    beh = p.add_argument_group("kubelet")
    beh.add_argument("--kubelet-version", metavar="VERSION", help="the kubelet to imitate (default: each node's)")
    beh.add_argument("--feature-gates", metavar="GATES", help="e.g. 'KubeletSeparateDiskGC=true'")
    out = p.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write DIR/variant-N/ (every candidate's results; 0 is the current settings) and compare.json/"
        "compare.parquet as whatif -o does, plus DIR/tune.json and DIR/recommended.yaml; costs the per-tick frames",
    )
    out.add_argument("--json", action="store_true", help="print tune.json to stdout instead of tables")
    add_speed_arguments(p)
    p.set_defaults(func=run_tune)
