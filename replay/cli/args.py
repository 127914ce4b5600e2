"""Command-line arguments shared by ``explain``, ``replay`` and ``whatif``: version, gates, configuration.

The configuration is layered as the kubelet layers it: a baseline (``--config``, ``--configz``, a
recorded ``/configz`` or the version's defaults), then every eviction flag given, each replacing
its field. The baseline document is read here but parsed per node, with that node's version.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from kube.errors import InputError
from replay.inputs import load_document
from replay.kubelet.config import EvictionConfig, FlagOverrides, apply_flags, config_from_fields, default_fields
from replay.kubelet.config import fields_from_kubelet_configuration as parse_fields
from replay.kubelet.manager import FsTopology
from replay.kubelet.versions import KNOWN_VERSIONS, VersionProfile, parse_feature_gates, profile
from replay.settings import DEFAULT_VERSION, Baseline, SettingsRequest


def add_kubelet_arguments(p: argparse.ArgumentParser, *, per_node: bool = False, variants: bool = False) -> None:
    """The configuration and behaviour groups; each flag applies on top of whatever the baseline is.

    ``variants`` (``whatif``): ``--config``, ``--configz`` and ``--eviction-pressure-transition-period`` may be
    repeated too, each occurrence a variant (:mod:`replay.whatif`)."""
    repeat = "append" if variants else "store"
    where = (
        "each node's recorded /configz, else the kubelet's defaults for that node's version"
        if per_node
        else "the kubelet's defaults for the version"
    )
    cfg = p.add_argument_group(
        "kubelet eviction configuration",
        f"Baseline: --config or --configz if given, else {where}. Every eviction flag below then replaces its "
        "field of the baseline, as the kubelet's flags override its config file.",
    )
    cfg.add_argument(
        "--config",
        action=repeat,
        metavar="FILE",
        help="a KubeletConfiguration file (YAML or JSON), e.g. /var/lib/kubelet/config.yaml",
    )
    cfg.add_argument(
        "--configz",
        action=repeat,
        metavar="FILE",
        help="saved output of: kubectl get --raw /api/v1/nodes/NODE/proxy/configz",
    )
    cfg.add_argument(
        "--eviction-hard",
        action="append",
        metavar="MAP",
        help="hard thresholds, replacing the baseline's: e.g. 'memory.available<1.5Gi,nodefs.available<10%%'",
    )
    cfg.add_argument(
        "--eviction-soft",
        action="append",
        metavar="MAP",
        help="soft thresholds (each needs a grace period): e.g. 'memory.available<2Gi'",
    )
    cfg.add_argument(
        "--eviction-soft-grace-period",
        action="append",
        metavar="MAP",
        help="grace period per soft signal: e.g. 'memory.available=1m30s'",
    )
    cfg.add_argument(
        "--eviction-minimum-reclaim",
        action="append",
        metavar="MAP",
        help="minimum reclaim per signal: e.g. 'memory.available=500Mi,imagefs.available=2Gi'",
    )
    cfg.add_argument(
        "--eviction-max-pod-grace-period",
        type=int,
        default=None,
        metavar="SECONDS",
        help="cap on a soft eviction's pod grace period, e.g. 30 (default: the baseline's, 0)",
    )
    cfg.add_argument(
        "--eviction-pressure-transition-period",
        action=repeat,
        metavar="DURATION",
        help="how long a pressure condition is held after it clears, e.g. 1m (default 5m0s)",
    )
    beh = p.add_argument_group("behaviour")
    default = (
        "each node's kubeletVersion, else " + DEFAULT_VERSION
        if per_node
        else (f"the node object's kubeletVersion, else {DEFAULT_VERSION}")
    )
    beh.add_argument(
        "--kubelet-version",
        metavar="VERSION",
        help=f"the kubelet to imitate, e.g. 1.30; one of {', '.join(KNOWN_VERSIONS)} (default: {default})",
    )
    beh.add_argument(
        "--feature-gates", metavar="GATES", help="e.g. 'InPlacePodVerticalScaling=true,KubeletSeparateDiskGC=false'"
    )
    beh.add_argument(
        "--dedicated-image-fs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="imagefs on its own device (default: inferred from the summary)",
    )
    beh.add_argument(
        "--split-image-fs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="writable container layers on a filesystem apart from images (default: inferred)",
    )


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


def overrides_from_args(args: argparse.Namespace) -> FlagOverrides:
    return FlagOverrides(
        eviction_hard=tuple(args.eviction_hard or ()),
        eviction_soft=tuple(args.eviction_soft or ()),
        eviction_soft_grace_period=tuple(args.eviction_soft_grace_period or ()),
        eviction_minimum_reclaim=tuple(args.eviction_minimum_reclaim or ()),
        eviction_max_pod_grace_period=args.eviction_max_pod_grace_period,
        eviction_pressure_transition_period=args.eviction_pressure_transition_period,
    )


def baseline_from_args(args: argparse.Namespace) -> Baseline | None:
    """The ``--config`` / ``--configz`` document, loaded but not parsed (that needs each node's version)."""
    if args.config and args.configz:
        raise InputError("give either --config or --configz, not both", field="--configz")
    return load_baseline(config=args.config, configz=args.configz)


def load_baseline(*, config: str | None = None, configz: str | None = None) -> Baseline | None:
    """A KubeletConfiguration file or a saved ``/configz`` response (checked for its shape)."""
    if config:
        doc = load_document(config)
        if not isinstance(doc, Mapping):
            raise InputError("expected a KubeletConfiguration object", source=config)
        return Baseline(doc, config)
    if configz:
        doc = load_document(configz)
        if not isinstance(doc, Mapping) or "kubeletconfig" not in doc:
            raise InputError("expected a /configz response with a top-level kubeletconfig object", source=configz)
        return Baseline(doc, configz)
    return None


def request_from_args(args: argparse.Namespace, label: str = "baseline") -> SettingsRequest:
    """Everything the flags ask, checked before any recording is read."""
    gates = gates_from_args(args)
    return SettingsRequest(
        kubelet_version=args.kubelet_version,
        feature_gates=dict(gates or {}),
        baseline=baseline_from_args(args),
        overrides=overrides_from_args(args),
        topology=topology_from_args(args),
        label=label,
    )


def config_from_args(args: argparse.Namespace, prof: VersionProfile, os: str = "linux") -> EvictionConfig | None:
    """One node's configuration for ``explain``: the baseline given (else the defaults) with the flags on top.

    None when nothing was given (the caller uses the defaults and says so).
    """
    baseline = baseline_from_args(args)
    overrides = overrides_from_args(args)
    if baseline is None and not overrides:
        return None
    fields = (
        parse_fields(baseline.document, source=baseline.source, profile=prof, os=os)
        if baseline
        else default_fields(prof, os)
    )
    return config_from_fields(prof, apply_flags(fields, overrides))


def add_speed_arguments(p: argparse.ArgumentParser) -> None:
    """``--jobs`` / ``--ray``: how the engine spreads nodes (the same for replay, whatif and explain)."""
    speed = p.add_argument_group("speed")
    speed.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        default=None,
        help="replay nodes in N local processes (default: all cores); results are identical",
    )
    speed.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the per-node tasks on a Ray cluster (pip install 'evictlens[ray]'); no ADDRESS: "
        "a local Ray instance; the recording must be at the same path on every Ray node",
    )


def jobs_of(args: argparse.Namespace) -> int:
    """``--jobs`` (at least 1), default all cores."""
    import os

    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise InputError(f"expected a number of processes of at least 1, got {jobs}", field="--jobs")
    return jobs or os.cpu_count() or 1


def add_counterfactual_argument(p: argparse.ArgumentParser) -> None:
    """``--counterfactual`` for ``replay`` and ``whatif`` (the model: replay/COUNTERFACTUAL.md)."""
    p.add_argument(
        "--counterfactual",
        action="store_true",
        help="closed loop: after each predicted eviction, take the pod's recorded usage off its node's "
        "later summaries (memory at once; writable layers, logs and emptyDir as the kubelet frees them; "
        "processes) instead of replaying what really happened (replay/COUNTERFACTUAL.md)",
    )
