"""``evictlens explain``: arguments and renderer only; the explanation is :mod:`replay.explain` (files) or
:mod:`replay.moment` (a moment of a recording, through the engine)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kube.errors import InputError
from replay.cli.args import (
    add_kubelet_arguments,
    add_speed_arguments,
    config_from_args,
    gates_from_args,
    topology_from_args,
)
from replay.context import resolve_profile
from replay.explain import SAMPLES, Explanation, explain
from replay.inputs import load_document
from replay.kubelet.api import parse_nodes, parse_pods
from replay.settings import detect_platform


def _sample_dir(name: str) -> Path:
    if name not in SAMPLES:
        raise InputError(f"unknown sample {name!r}; bundled samples: {', '.join(SAMPLES)}", field="--sample")
    import recordings

    return Path(recordings.__file__).parent / "samples" / name


def run_explain(args: argparse.Namespace) -> int:
    from replay.report import explanation_json, print_explanation

    if args.recording:
        explanation = _explain_recording(args)
        print(explanation_json(explanation)) if args.json else print_explanation(explanation)
        return 0
    if args.at is not None or args.tick is not None:
        raise InputError("--at and --tick need a recording: evictlens explain REC --node NAME --at TIME", field="--at")
    if args.sample:
        base = _sample_dir(args.sample)
        args.summary = args.summary or str(base / "summary.json")
        args.pods = args.pods or str(base / "pods.json")
        args.node = args.node or str(base / "node.json")
        if not (args.config or args.configz or args.eviction_hard):
            args.config = str(base / "kubelet-config.yaml")
    if not args.summary:
        raise InputError(
            "a summary is required (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary)", field="--summary"
        )
    gates = gates_from_args(args)
    raw = load_document(args.summary)
    node = None
    if args.node:
        nodes = parse_nodes(load_document(args.node), source=args.node)
        node = nodes[0] if nodes else None
    config = config_from_args(args, resolve_profile(args.kubelet_version, node, gates)[0])
    raw_pods = load_document(args.pods) if args.pods else None
    pods = parse_pods(raw_pods, source=args.pods) if args.pods else None
    topology = topology_from_args(args)
    platform = detect_platform(node, _pod_items(raw_pods), lambda: _system_container_names(raw))
    explanation = explain(
        raw,
        args.summary,
        pods=pods,
        node=node,
        config=config,
        version=args.kubelet_version,
        feature_gates=gates,
        topology=topology,
        platform=platform,
    )
    if args.json:
        print(explanation_json(explanation))
    else:
        print_explanation(explanation)
    return 0


def _system_container_names(raw: Any) -> list[str]:
    """The summary's ``node.systemContainers`` names (its shape tells a Windows kubelet)."""
    node = raw.get("node") if isinstance(raw, dict) else None
    containers = node.get("systemContainers") if isinstance(node, dict) else None
    return [str(c["name"]) for c in containers or () if isinstance(c, dict) and isinstance(c.get("name"), str)]


def _pod_items(raw: Any) -> list[Any]:
    """The pod objects of a PodList, a list or one Pod (for the OS hint)."""
    if isinstance(raw, dict):
        items = raw.get("items")
        return list(items) if isinstance(items, list) else [raw]
    return list(raw) if isinstance(raw, list) else []


def _explain_recording(args: argparse.Namespace) -> Explanation:
    """``explain REC --node NAME --at TIME|first-eviction`` / ``--tick K``: one moment of a replay."""
    from recordings.reader import open_recording
    from replay.cli.args import jobs_of, request_from_args
    from replay.engine import Moment
    from replay.moment import explain_moment

    if args.summary or args.pods or args.sample:
        raise InputError("give a recording or --summary/--pods/--sample files, not both", field="recording")
    moment = Moment.parse(args.at, args.tick)
    request = request_from_args(args)
    return explain_moment(open_recording(args.recording), request, args.node, moment, jobs=jobs_of(args))


def add_explain_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "explain",
        help="what would the kubelet evict from this summary, and why",
        description="Run one eviction-manager pass over a Summary API response and explain the verdict: each "
        "signal against its thresholds, the node conditions, the pod the kubelet would evict with its exact "
        "Event message, and the ranking. Example: %(prog)s --summary summary.json --pods pods.json "
        "--node node.json --configz configz.json (or: %(prog)s --sample kind-sidecars)",
    )
    p.add_argument(
        "recording",
        nargs="?",
        help="a recording directory: explain one moment of its replay (then --node names the node), "
        "e.g. evictlens explain rec/ --node kind-worker --at first-eviction",
    )
    when = p.add_argument_group("a moment of a recording")
    when.add_argument(
        "--at",
        metavar="TIME",
        help="the last pass at or before this RFC 3339 time, e.g. 2024-05-20T10:15:20Z, "
        "or 'first-eviction' (the first pass the replay evicts at)",
    )
    when.add_argument("--tick", type=int, metavar="K", help="the pass of recorded tick K, e.g. 12")
    src = p.add_argument_group("inputs (what kubectl prints)")
    src.add_argument(
        "--summary",
        metavar="FILE",
        help="the node's Summary API response: kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary > summary.json",
    )
    src.add_argument(
        "--pods",
        metavar="FILE",
        help="the node's pods for exact requests, priorities and QoS: kubectl get pods -A -o json "
        "--field-selector spec.nodeName=NODE > pods.json (or the kubelet's /pods)",
    )
    src.add_argument(
        "--node",
        metavar="FILE",
        help="the node object, for the kubelet version and OS: kubectl get node NODE -o json > node.json"
        "; with a recording, the node's name, e.g. kind-worker",
    )
    src.add_argument(
        "--sample",
        metavar="NAME",
        help=f"a bundled sample instead of files, e.g. --sample {SAMPLES[0]} (one of: {', '.join(SAMPLES)})",
    )
    add_kubelet_arguments(p)
    add_speed_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables (for scripts)")
    p.set_defaults(func=run_explain)
