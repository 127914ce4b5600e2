"""What-if sweeps: one recording replayed under several settings, variant 0 always the recorded settings.

Each occurrence of a settings flag is one value of its dimension (``--eviction-soft`` paired with
``--eviction-soft-grace-period`` by position); the variants are the product of the dimensions given,
times the ``--kubelet-version`` list when both are given. The engine (:func:`replay.engine.replay`)
runs every variant at once: each node's columns are read and decoded once and each variant has its own
state machine over them.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from recordings.errors import InputError
from replay.cli_args import request_from_args, topology_from_args
from replay.settings import SettingsRequest

MAX_VARIANTS = 64
"""More is almost certainly a typo'd product; each variant is a full replay."""

Choice = tuple[str, dict[str, object]]
"""(label part, argparse attributes it sets)."""


@dataclass(frozen=True)
class Variant:
    index: int
    label: str
    request: SettingsRequest


def _one(flag: str, dest: str, values: Sequence[str] | None, *, as_list: bool = True) -> list[Choice]:
    return [(f"{flag}={v}", {dest: [v] if as_list else v}) for v in values or ()]


def _soft(args: argparse.Namespace) -> list[Choice]:
    soft, grace = list(args.eviction_soft or ()), list(args.eviction_soft_grace_period or ())
    if not soft:
        return _one("--eviction-soft-grace-period", "eviction_soft_grace_period", grace)
    if len(grace) not in (0, 1, len(soft)):
        raise InputError(f"{len(soft)} --eviction-soft variants but {len(grace)} --eviction-soft-grace-period: give "
                         "one grace period for all, or one per soft variant (paired by position)",
                         field="--eviction-soft-grace-period")
    out: list[Choice] = []
    for i, s in enumerate(soft):
        g = grace[i] if len(grace) == len(soft) else (grace[0] if grace else None)
        label = f"--eviction-soft={s}" + (f" --eviction-soft-grace-period={g}" if g else "")
        out.append((label, {"eviction_soft": [s], "eviction_soft_grace_period": [g] if g else None}))
    return out


def _configs(args: argparse.Namespace) -> list[Choice]:
    out = [(f"--config={c}", {"config": c, "configz": None}) for c in args.config or ()]
    out += [(f"--configz={c}", {"config": None, "configz": c}) for c in args.configz or ()]
    return out


def versions_from_arg(value: str | None) -> list[str]:
    """``1.30,1.32`` → ``["1.30", "1.32"]`` (repeats dropped)."""
    return list(dict.fromkeys(v.strip() for v in (value or "").split(",") if v.strip()))


def variants_from_args(args: argparse.Namespace) -> list[Variant]:
    """The baseline, then the product of every settings dimension given (× the versions)."""
    dimensions = [d for d in (
        _one("--eviction-hard", "eviction_hard", args.eviction_hard),
        _soft(args),
        _one("--eviction-minimum-reclaim", "eviction_minimum_reclaim", args.eviction_minimum_reclaim),
        _one("--eviction-pressure-transition-period", "eviction_pressure_transition_period",
             args.eviction_pressure_transition_period, as_list=False),
        _configs(args),
    ) if d]
    versions: list[Choice] = [(f"kubelet {v}", {"kubelet_version": v}) for v in versions_from_arg(args.kubelet_version)]
    if versions:
        dimensions.append(versions)
    if not dimensions:
        raise InputError("nothing to compare with the recorded settings: give at least one --eviction-hard, "
                         "--eviction-soft, --eviction-minimum-reclaim, --eviction-pressure-transition-period, "
                         "--config/--configz or --kubelet-version 1.30,1.32", field="whatif")
    count = 1
    for d in dimensions:
        count *= len(d)
    if count > MAX_VARIANTS:
        raise InputError(f"{count} variants (the product of the flags given) is more than {MAX_VARIANTS}",
                         field="whatif")
    topology = topology_from_args(args)
    counterfactual = bool(getattr(args, "counterfactual", False))
    out = [Variant(0, "baseline", SettingsRequest(topology=topology, counterfactual=counterfactual,
                                                  label="baseline"))]
    common = {"eviction_hard": None, "eviction_soft": None, "eviction_soft_grace_period": None,
              "eviction_minimum_reclaim": None, "eviction_pressure_transition_period": None, "config": None,
              "configz": None, "kubelet_version": None}
    for combo in itertools.product(*dimensions):
        ns = argparse.Namespace(**{**vars(args), **common})
        for _label, attrs in combo:
            for key, value in attrs.items():
                setattr(ns, key, value)
        label = " ".join(part for part, _ in combo)
        request = request_from_args(ns, label=label)
        out.append(Variant(len(out), label, dataclasses.replace(request, counterfactual=counterfactual)))
    return out
