"""``evictlens scenario``: node pressure from a description, written as a recording, no cluster needed.

``evictlens scenario FILE.yaml -o REC`` runs the file closed-loop (:mod:`replay.scenario`),
``--list`` names the bundled scenarios, ``--sample NAME -o REC`` writes one and ``--show`` prints
its YAML to start your own from. The schema is recordings/SCENARIOS.md.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from kube.errors import EXIT_OK, InputError
from recordings.cli_edge import SubParsers

HELP = "build a recording from a scenario file: node pressure reproduced without a cluster"


EVICTION_FLAGS = (
    "eviction-hard",
    "eviction-soft",
    "eviction-soft-grace-period",
    "eviction-minimum-reclaim",
    "eviction-max-pod-grace-period",
    "eviction-pressure-transition-period",
)
"""The kubelet flags ``scenario`` takes like ``replay``/``whatif``: each replaces its field in every node's kubelet."""


def kubelet_flags(args: argparse.Namespace) -> list[str]:
    """``--eviction-hard memory.available<500Mi`` → ``["--eviction-hard=memory.available<500Mi"]``."""
    out = []
    for name in EVICTION_FLAGS:
        value = getattr(args, name.replace("-", "_"), None)
        if value is not None:
            out.append(f"--{name}={value}")
    return out


def _load(args: argparse.Namespace) -> Any:
    from recordings.scenarios import load_bundled, load_scenario

    flags = kubelet_flags(args)
    if args.sample:
        return load_bundled(args.sample, kubelet_version=args.kubelet_version, kubelet_flags=flags)
    return load_scenario(args.file, kubelet_version=args.kubelet_version, kubelet_flags=flags)


def run_scenario_command(args: argparse.Namespace) -> int:
    from recordings.console import make_console

    given = [x for x in (args.file, args.sample) if x]
    if args.list:
        if given or args.output:
            raise InputError("--list takes no scenario and no -o", field="--list")
        from recordings.scenarios import list_bundled

        console = make_console()
        for name, description in list_bundled():
            console.print(f"{name:<22} {description}", markup=False, soft_wrap=True)
        return EXIT_OK
    if len(given) != 1:
        raise InputError("give a scenario FILE or --sample NAME (or --list)", field="scenario")
    if args.show:
        if not args.sample:
            raise InputError("--show prints a bundled scenario; use it with --sample NAME", field="--show")
        from recordings.scenarios import bundled_text

        print(bundled_text(args.sample).decode(), end="")
        return EXIT_OK
    if not args.output:
        raise InputError("where should the recording go? give -o DIR", field="-o")
    gates = None
    if args.feature_gates:
        from replay.kubelet.versions import parse_feature_gates

        gates = parse_feature_gates(args.feature_gates)
    scenario = _load(args)
    from replay.scenario import run_scenario

    outcome = run_scenario(
        scenario,
        args.output,
        feature_gates=gates,
        kubelet_flags=kubelet_flags(args),
        kubelet_version=args.kubelet_version,
    )
    if args.json:
        print(outcome_json(outcome))
    else:
        print_outcome(outcome, make_console())
    return EXIT_OK


def outcome_json(outcome: Any) -> str:
    from recordings.summary_codec import format_time

    sc = outcome.scenario
    doc = {
        "scenario": sc.name,
        "digest": sc.digest,
        "recording": str(outcome.out),
        "ticks": outcome.ticks,
        "kubelet_versions": dict(outcome.kubelet_versions),
        "evictions": [
            {
                "node": e.node,
                "tick": e.tick,
                "time": e.time.isoformat(),
                "namespace": e.namespace,
                "pod": e.pod,
                "uid": e.uid,
                "cause": e.cause,
                "owner_kinds": list(e.owner_kinds),
                "message": e.message,
            }
            for e in outcome.evictions
        ],
        "rejected_at_admission": [{"node": n, "pod": p, "message": m} for n, p, m in outcome.rejected],
        "condition_changes": [
            {"node": n, "time": t.isoformat(), "conditions": list(c)} for n, t, c in outcome.condition_changes
        ],
        "kernel_kills": [
            {
                "node": k.node,
                "time": format_time(k.at),
                "pod": k.pod,
                "container": k.container,
                "scope": k.scope,
                "process": k.process,
                "pid": k.pid,
                "restart": None if k.restart_at is None else format_time(k.restart_at),
            }
            for k in outcome.kernel_kills
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


def print_outcome(outcome: Any, console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from recordings.console import print_table
    from recordings.scenarios.units import format_duration
    from recordings.summary_codec import format_time

    sc = outcome.scenario
    console.print(f"[bold]scenario[/bold] {sc.name} ({sc.digest[:19]}…) → {outcome.out}", soft_wrap=True)
    nodes = ", ".join(f"{n}: kubelet {v}" for n, v in sorted(outcome.kubelet_versions.items()))
    console.print(
        f"  {len(sc.nodes)} node(s) ({nodes}); {outcome.ticks} ticks every {format_duration(sc.interval)}"
        f" over {format_duration(sc.duration)}; closed loop",
        markup=False,
        soft_wrap=True,
    )
    for node, when, conditions in outcome.condition_changes:
        console.print(
            f"  {when.isoformat()}  {node}: node conditions {', '.join(conditions) or 'none'}",
            markup=False,
            soft_wrap=True,
        )
    if outcome.evictions:
        table = Table(title="evictions the kubelet made (the recording's ground truth)", title_justify="left")
        for col in ("time", "node", "pod", "cause", "message"):
            table.add_column(col, overflow="fold")
        for e in outcome.evictions:
            table.add_row(e.time.isoformat(), e.node, f"{e.namespace}/{e.pod}", e.cause, Text(repr(e.message)))
        print_table(console, table)
    else:
        console.print("  no evictions", markup=False)
    for node, pod, message in outcome.rejected:
        console.print(f"  {node}: {pod} rejected at admission: {message!r}", markup=False, soft_wrap=True)
    scopes = {"container": "at its own limit", "pods": "the pods' cgroup at its limit", "node": "node out of memory"}
    for k in outcome.kernel_kills:
        after = "stays terminated" if k.restart_at is None else f"restarted at {format_time(k.restart_at)}"
        console.print(
            f"  {format_time(k.at)}  {k.node}: kernel OOM-killed {k.pod} container {k.container} ({k.process}, "
            f"pid {k.pid}; {scopes.get(k.scope, k.scope)}), {after}",
            markup=False,
            soft_wrap=True,
        )
    console.print(f"replay it: evictlens replay {outcome.out}", markup=False, soft_wrap=True)


def add_scenario_parser(sub: SubParsers) -> None:
    p = sub.add_parser(
        "scenario",
        help=HELP,
        description="Generate a recording from a scenario (recordings/SCENARIOS.md): nodes, kubelet version and "
        "eviction settings, pods and their usage curves. The kubelet's eviction manager runs inside the loop, so an "
        "evicted pod stops using anything and turns Failed/Evicted, as on a real node.",
        epilog="Examples: evictlens scenario --list; evictlens scenario --sample sidecar-stress -o rec/; "
        "evictlens replay rec/ --kubelet-version 1.32",
    )
    p.add_argument("file", nargs="?", metavar="FILE.yaml", help="a scenario file")
    p.add_argument("-o", "--output", metavar="DIR", help="the recording to write (a new or empty directory)")
    p.add_argument("--list", action="store_true", help="list the bundled scenarios")
    p.add_argument("--sample", metavar="NAME", help="use a bundled scenario (see --list)")
    p.add_argument("--show", action="store_true", help="print the bundled scenario's YAML (with --sample)")
    p.add_argument(
        "--kubelet-version",
        metavar="VERSION",
        help="run every node as this kubelet version instead of the scenario's (e.g. 1.32)",
    )
    p.add_argument("--feature-gates", metavar="GATES", help="extra kubelet feature gates, e.g. 'A=true,B=false'")
    examples = {
        "eviction-hard": "'memory.available<500Mi,nodefs.available<10%%'",
        "eviction-soft": "'memory.available<1.5Gi'",
        "eviction-soft-grace-period": "memory.available=30s",
        "eviction-minimum-reclaim": "memory.available=200Mi",
        "eviction-max-pod-grace-period": "30",
        "eviction-pressure-transition-period": "30s",
    }
    for name in EVICTION_FLAGS:
        p.add_argument(
            f"--{name}",
            metavar="VALUE",
            help=f"replaces its field in every node's kubelet, as the flag does, e.g. {examples[name]}",
        )
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON document")
    p.set_defaults(func=run_scenario_command)
