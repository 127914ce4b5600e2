"""What-if sweeps: one recording under several settings, variant 0 always the recorded settings.

A variant is a :class:`~replay.settings.SettingsRequest` made from the common one with
``dataclasses.replace``: each dimension (one flag, or the kubelet versions) lists the values it takes,
and the variants are the product of the dimensions. The engine (:func:`replay.engine.replay`) runs
every variant at once: each node's columns are read and decoded once, each variant has its own state
machine over them. Parsing flags into dimensions is the CLI's (:mod:`replay.cli.whatif`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kube.errors import InputError
from replay.settings import SettingsRequest

MAX_VARIANTS = 64
"""More is almost certainly a typo'd product; each variant runs its own state machine."""


@dataclass(frozen=True)
class Change:
    """One value of a dimension: its label and what it sets."""

    label: str
    overrides: Mapping[str, object] = dataclasses.field(default_factory=dict)
    """FlagOverrides fields it replaces."""
    request: Mapping[str, object] = dataclasses.field(default_factory=dict)
    """SettingsRequest fields it replaces (``kubelet_version``, ``baseline``)."""


@dataclass(frozen=True)
class Variant:
    index: int
    label: str
    request: SettingsRequest


def variants(
    common: SettingsRequest, dimensions: Sequence[Sequence[Change]], *, baseline: SettingsRequest | None = None
) -> list[Variant]:
    """The baseline (the recorded settings, unless given), then one variant per combination of the dimensions'
    values, each the common request with those changes."""
    dimensions = [d for d in dimensions if d]
    if not dimensions:
        raise InputError(
            "nothing to compare with the recorded settings: give at least one --eviction-hard, "
            "--eviction-soft, --eviction-minimum-reclaim, --eviction-pressure-transition-period, "
            "--config/--configz or --kubelet-version 1.30,1.32",
            field="whatif",
        )
    count = 1
    for d in dimensions:
        count *= len(d)
    if count > MAX_VARIANTS:
        raise InputError(
            f"{count} variants (the product of the flags given) is more than {MAX_VARIANTS}", field="whatif"
        )
    first = baseline or SettingsRequest(
        topology=common.topology, counterfactual=common.counterfactual, label="baseline"
    )
    out = [Variant(0, "baseline", first)]
    for combo in itertools.product(*dimensions):
        overrides: dict[str, object] = {}
        request: dict[str, object] = {}
        for change in combo:
            overrides.update(change.overrides)
            request.update(change.request)
        label = " ".join(change.label for change in combo)
        made = dataclasses.replace(
            common,
            **request,  # type: ignore[arg-type]
            label=label,
            overrides=dataclasses.replace(common.overrides, **overrides),  # type: ignore[arg-type]
        )
        out.append(Variant(len(out), label, made))
    return out
