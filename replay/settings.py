"""What a replay was asked to imitate, and what each node ends up configured with — and why.

The kubelet builds its eviction configuration in layers: version defaults, then the config file
(or, seen from outside, ``/configz``), then command-line flags, each flag replacing its field
(cmd/kubelet/app/server.go: loadConfigFile, kubeletConfigFlagPrecedence). A replay does the same
per node, with *that node's* version profile, so a 1.30 node gets 1.30's defaults even when
another node of the recording runs 1.32. Every field of the result says where it came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kube.errors import InputError
from replay.kubelet.api import Node
from replay.kubelet.config import (
    EvictionConfig,
    EvictionFields,
    FlagOverrides,
    apply_flags,
    config_from_fields,
    default_fields,
    fields_from_kubelet_configuration,
)
from replay.kubelet.duration import format_duration
from replay.kubelet.manager import FsTopology
from replay.kubelet.signals import SYSTEM_CONTAINER_WINDOWS_COMMIT as WINDOWS_COMMIT_CONTAINER
from replay.kubelet.versions import VersionProfile, profile

DEFAULT_VERSION = "1.37"
"""Used when neither ``--kubelet-version`` nor a supported node version is given (said in the output)."""


@dataclass(frozen=True)
class Baseline:
    """A configuration document given on the command line (``--config`` or ``--configz``), not yet parsed:
    it is read with each node's own version profile."""

    document: Mapping[str, Any]
    source: str


@dataclass(frozen=True)
class SettingsRequest:
    """What was asked: the label that makes two replays comparable."""

    kubelet_version: str | None = None
    """None: each node as its node object reports (``per node``)."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    baseline: Baseline | None = None
    """None: each node's recorded ``/configz``, else its version's defaults."""
    overrides: FlagOverrides = field(default_factory=FlagOverrides)
    topology: FsTopology | None = None
    """None: inferred from each node's first summary."""
    label: str = "baseline"
    counterfactual: bool = False
    """Take each predicted eviction's pod usage off its node's later summaries (replay/counterfactual.py)."""

    def describe(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kubelet_version": self.kubelet_version or "per node",
            "feature_gates": dict(self.feature_gates),
            "config_source": self.baseline.source if self.baseline else "recorded /configz per node, else defaults",
            "overrides": self.overrides.given(),
            "topology": (
                "inferred per node"
                if self.topology is None
                else {
                    "dedicated_image_fs": self.topology.dedicated_image_fs,
                    "split_container_image_fs": self.topology.split_container_image_fs,
                }
            ),
            "counterfactual": self.counterfactual,
        }


@dataclass(frozen=True)
class NodeSettings:
    """One node's effective settings and where each came from."""

    node: str
    profile: VersionProfile
    version_source: str
    platform: str
    config: EvictionConfig

    def sources(self) -> dict[str, str]:
        return dict(self.config.sources)

    def digest_doc(self) -> dict[str, Any]:
        c = self.config
        return {
            "node": self.node,
            "kubelet_version": self.profile.version,
            "feature_gates": dict(sorted(self.profile.feature_gates.items())),
            "platform": self.platform,
            "evictionHard": dict(c.eviction_hard),
            "evictionSoft": dict(c.eviction_soft),
            "evictionSoftGracePeriod": dict(c.eviction_soft_grace_period),
            "evictionMinimumReclaim": dict(c.eviction_minimum_reclaim),
            "evictionMaxPodGracePeriod": c.max_pod_grace_period_seconds,
            "evictionPressureTransitionPeriod": format_duration(c.pressure_transition_period),
            "enforceNodeAllocatable": list(c.enforce_node_allocatable),
            "localStorageCapacityIsolation": c.local_storage_capacity_isolation,
        }


def resolve_profile(
    version: str | None, node: Node | None, feature_gates: Mapping[str, bool] | None
) -> tuple[VersionProfile, str]:
    """The explicit version, else the node's kubeletVersion when supported, else the default — and say which."""
    if version:
        return profile(version, feature_gates), "from --kubelet-version"
    node_version = node.kubelet_version if node is not None else ""
    if node_version:
        try:
            return profile(node_version, feature_gates), f"from the node object (kubeletVersion {node_version})"
        except InputError:
            note = f"default {DEFAULT_VERSION}: the node reports {node_version}, not a supported version"
            return profile(DEFAULT_VERSION, feature_gates), note
    return profile(DEFAULT_VERSION, feature_gates), f"default {DEFAULT_VERSION}; pass --kubelet-version to choose"


OS_LABEL = "kubernetes.io/os"
POD_OS_SCAN = 200
"""Pod versions read for an OS hint when no node object names the OS (a Windows capture without its Node)."""


def pod_os(pod: Mapping[str, Any]) -> str | None:
    """The OS a pod demands: ``spec.os.name`` (PodOS, 1.25+), else ``nodeSelector[kubernetes.io/os]``."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return None
    os_field = spec.get("os")
    if isinstance(os_field, Mapping) and isinstance(os_field.get("name"), str) and os_field["name"]:
        return str(os_field["name"])
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping) and isinstance(selector.get(OS_LABEL), str) and selector[OS_LABEL]:
        return str(selector[OS_LABEL])
    return None


def detect_platform(
    node: Node | None,
    pods: Iterable[Mapping[str, Any]] = (),
    system_containers: Callable[[], Iterable[str]] | None = None,
) -> tuple[str, str]:
    """The node's OS and where it was read — the node object (``nodeInfo.operatingSystem``, else its
    ``kubernetes.io/os`` label), else the OS its pods demand, else the summary's shape (only a Windows
    kubelet reports the ``windows-global-commit-memory`` system container; ``system_containers`` gives the
    names, asked only when needed), else Linux *assumed*, which is said.

    The platform picks the kubelet's defaults (eviction/defaults_windows.go: memory.available<500Mi,
    nodefs.available<10%, imagefs.available<15%, no inode defaults) and the memory signal
    (helpers_windows.go: the ``windows-global-commit-memory`` system container, PR #122922) — both from 1.31
    (VersionProfile.windows_memory_pressure); a Windows Summary has no inode fields and no ``rlimit``, so
    inode and PID thresholds never have an observation.
    """
    if node is not None and node.os:
        return node.os, "from the node object"
    seen: set[str] = set()
    for i, pod in enumerate(pods):
        if i >= POD_OS_SCAN:
            break
        found = pod_os(pod)
        if found:
            seen.add(found)
    if len(seen) == 1:
        (only,) = seen
        return only, f"from its pods' {OS_LABEL} (no node object names the OS)"
    if len(seen) > 1:
        raise InputError(
            f"its pods demand different operating systems ({', '.join(sorted(seen))}) and no node "
            "object names the OS; record or import the Node object"
        )
    if system_containers is not None and WINDOWS_COMMIT_CONTAINER in set(system_containers()):
        return "windows", f"from the summary's shape (a {WINDOWS_COMMIT_CONTAINER} system container)"
    return "linux", "assumed (no node object or pod names the OS)"


def resolve_node(
    request: SettingsRequest,
    node_name: str,
    node: Node | None,
    recorded_configz: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]] = (),
    system_containers: Callable[[], Iterable[str]] | None = None,
) -> NodeSettings:
    """Version profile first (the node's own), then the baseline parsed with it, then the flags on top.
    ``pods`` (the node's pod objects) and ``system_containers`` (its summaries' system container names) are
    read for the OS only when no node object names it."""
    prof, version_source = resolve_profile(request.kubelet_version, node, request.feature_gates or None)
    try:
        platform, platform_source = detect_platform(node, pods, system_containers)
    except InputError as err:
        raise InputError(f"node {node_name}: {err.problem}") from None
    if platform_source != "from the node object":
        version_source += f"; platform {platform} {platform_source}"
    configured = _configured_gates(request, recorded_configz, prof)
    if configured:
        prof = profile(prof.version, {**configured, **request.feature_gates})
        where = request.baseline.source if request.baseline is not None else f"recorded /configz of {node_name}"
        version_source += f"; feature gates {', '.join(f'{k}={v}' for k, v in configured.items())} from {where}"
    try:
        fields: EvictionFields
        if request.baseline is not None:
            fields = fields_from_kubelet_configuration(
                request.baseline.document, source=request.baseline.source, profile=prof, os=platform
            )
        elif recorded_configz is not None:
            doc = recorded_configz if "kubeletconfig" in recorded_configz else {"kubeletconfig": recorded_configz}
            fields = fields_from_kubelet_configuration(
                doc, source=f"recorded /configz of {node_name}", profile=prof, os=platform
            )
        else:
            fields = default_fields(prof, platform)
        config = config_from_fields(prof, apply_flags(fields, request.overrides))
    except InputError as err:
        raise InputError(
            f"{err.problem} (node {node_name}, kubelet {prof.version})", source=err.source, field=err.field
        ) from None
    return NodeSettings(node_name, prof, version_source, platform, config)


def _configured_gates(
    request: SettingsRequest, recorded_configz: Mapping[str, Any] | None, prof: VersionProfile
) -> dict[str, bool]:
    """The baseline's ``featureGates`` that the eviction port models and the version lets change.

    A node's configuration turns gates on or off as much as its version does; gates the port does
    not model (most of them) do not matter to eviction, and ``--feature-gates`` still wins.
    """
    doc: Any = request.baseline.document if request.baseline is not None else recorded_configz
    if not isinstance(doc, Mapping):
        return {}
    cfg = doc.get("kubeletconfig", doc)
    gates = cfg.get("featureGates") if isinstance(cfg, Mapping) else None
    if not isinstance(gates, Mapping):
        return {}
    out = {}
    for name, value in gates.items():
        if name in prof.feature_gates and isinstance(value, bool) and name not in request.feature_gates:
            try:
                profile(prof.version, {name: value})
            except InputError:
                continue  # locked to its default in this version: the kubelet would refuse to start
            out[str(name)] = value
    return out


def settings_digest(nodes: Mapping[str, NodeSettings] | list[NodeSettings]) -> str:
    """A short digest of every node's effective settings: equal digests, comparable replays."""
    items = nodes.values() if isinstance(nodes, Mapping) else nodes
    doc = sorted((n.digest_doc() for n in items), key=lambda d: str(d["node"]))
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
