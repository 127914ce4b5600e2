"""Command-line arguments shared by ``explain`` and ``replay``: kubelet version, gates, configuration."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from replay.errors import InputError
from replay.inputs import load_document
from replay.kubelet.config import EvictionConfig, config_from_flags, config_from_kubelet_configuration
from replay.kubelet.manager import FsTopology
from replay.kubelet.versions import KNOWN_VERSIONS, VersionProfile, parse_feature_gates, profile


def add_kubelet_arguments(p: argparse.ArgumentParser) -> None:
    """The configuration and behaviour groups (defaults: the kubelet's own)."""
    cfg = p.add_argument_group("kubelet eviction configuration (default: the kubelet's defaults)")
    cfg.add_argument("--config", metavar="FILE", help="a KubeletConfiguration file (YAML or JSON)")
    cfg.add_argument("--configz", metavar="FILE", help="kubectl get --raw /api/v1/nodes/NODE/proxy/configz")
    cfg.add_argument("--eviction-hard", action="append", metavar="MAP", help="e.g. 'memory.available<1.5Gi'")
    cfg.add_argument("--eviction-soft", action="append", metavar="MAP")
    cfg.add_argument(
        "--eviction-soft-grace-period", action="append", metavar="MAP", help="e.g. 'memory.available=1m30s'"
    )
    cfg.add_argument("--eviction-minimum-reclaim", action="append", metavar="MAP")
    cfg.add_argument("--eviction-max-pod-grace-period", type=int, default=0, metavar="SECONDS")
    cfg.add_argument("--eviction-pressure-transition-period", metavar="DURATION")
    beh = p.add_argument_group("behaviour")
    beh.add_argument("--kubelet-version", metavar="VERSION", help=f"one of {', '.join(KNOWN_VERSIONS)}")
    beh.add_argument("--feature-gates", metavar="GATES", help="e.g. 'InPlacePodVerticalScaling=true'")
    beh.add_argument("--dedicated-image-fs", action=argparse.BooleanOptionalAction, default=None)
    beh.add_argument("--split-image-fs", action=argparse.BooleanOptionalAction, default=None)


def gates_from_args(args: argparse.Namespace) -> dict[str, bool] | None:
    """Parse --feature-gates and fail fast on an unknown version or gate, before reading any file."""
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else None
    if args.kubelet_version:
        profile(args.kubelet_version, gates)
    return gates


def topology_from_args(args: argparse.Namespace) -> FsTopology | None:
    if args.dedicated_image_fs is None and args.split_image_fs is None:
        return None
    return FsTopology(bool(args.dedicated_image_fs), bool(args.split_image_fs))


def config_from_args(args: argparse.Namespace, prof: VersionProfile) -> EvictionConfig | None:
    if args.config:
        return config_from_kubelet_configuration(load_document(args.config), source=args.config, profile=prof)
    if args.configz:
        doc = load_document(args.configz)
        if not isinstance(doc, Mapping) or "kubeletconfig" not in doc:
            raise InputError("expected a /configz response with a top-level kubeletconfig object", source=args.configz)
        return config_from_kubelet_configuration(doc, source=args.configz, profile=prof)
    if args.eviction_hard or args.eviction_soft:
        return config_from_flags(
            prof,
            eviction_hard=args.eviction_hard or (),
            eviction_soft=args.eviction_soft or (),
            eviction_soft_grace_period=args.eviction_soft_grace_period or (),
            eviction_minimum_reclaim=args.eviction_minimum_reclaim or (),
            max_pod_grace_period_seconds=args.eviction_max_pod_grace_period,
            pressure_transition_period=args.eviction_pressure_transition_period,
        )
    return None
