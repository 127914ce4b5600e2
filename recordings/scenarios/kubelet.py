"""A scenario's kubelet: its settings as /configz would show them, and the node sizes they imply.

Mirrors, without importing ``replay`` (data flows recordings → replay):
cmd/kubelet/app/server.go (loadConfigFile: a partly set ``evictionHard`` replaces the defaults,
``mergeDefaultEvictionSettings`` in 1.33+ adds them back), pkg/kubelet/eviction/defaults_linux.go
(the default map, ``imagefs.inodesFree`` from 1.30), and pkg/kubelet/cm/node_container_manager_linux.go
(allocatable = capacity − kube-reserved − system-reserved − hard eviction; the ``kubepods`` cgroup
limit, which the Summary API's ``pods`` system container reports, leaves out the eviction part).
The replay parses the resulting /configz with its exact port; tests pin the two defaults equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kube.signals import SIGNALS

from .units import format_duration, parse_amount, parse_duration, parse_quantity
from .yamlpos import Located
from .yamlpos import Path as YPath

CONFIG_FIELDS = (
    "apiVersion",
    "kind",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionMaxPodGracePeriod",
    "evictionPressureTransitionPeriod",
    "mergeDefaultEvictionSettings",
    "enforceNodeAllocatable",
    "localStorageCapacityIsolation",
    "kubeReserved",
    "systemReserved",
    "featureGates",
    "kernelMemcgNotification",
)
# kubelet flag → (KubeletConfiguration field, how its value is written)
FLAGS: Mapping[str, tuple[str, str]] = {
    "eviction-hard": ("evictionHard", "<"),
    "eviction-soft": ("evictionSoft", "<"),
    "eviction-soft-grace-period": ("evictionSoftGracePeriod", "="),
    "eviction-minimum-reclaim": ("evictionMinimumReclaim", "="),
    "eviction-max-pod-grace-period": ("evictionMaxPodGracePeriod", "int"),
    "eviction-pressure-transition-period": ("evictionPressureTransitionPeriod", "duration"),
    "kube-reserved": ("kubeReserved", "="),
    "system-reserved": ("systemReserved", "="),
    "enforce-node-allocatable": ("enforceNodeAllocatable", "list"),
    "feature-gates": ("featureGates", "gates"),
}
_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.+-]*)?$")


@dataclass(frozen=True)
class KubeletSettings:
    """The kubelet of one node: version (``nodeInfo.kubeletVersion``) and effective /configz."""

    version: str
    minor: int
    config: Mapping[str, Any]
    """The effective KubeletConfiguration (eviction part) as /configz reports it."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)

    def configz(self) -> dict[str, Any]:
        return {"kubeletconfig": dict(self.config)}

    def reserved(self, resource: str) -> int:
        total = 0
        for key in ("kubeReserved", "systemReserved"):
            value = (self.config.get(key) or {}).get(resource)
            if value is not None:
                total += parse_amount(value)
        return total

    def hard_threshold(self, signal: str, capacity: int) -> int:
        """The hard eviction threshold of ``signal`` in units (a percentage of ``capacity``), 0 if none."""
        value = (self.config.get("evictionHard") or {}).get(signal)
        if value is None:
            return 0
        text = str(value).strip()
        if text.endswith("%"):
            return int(parse_quantity(text[:-1]) * capacity / 100)
        return parse_amount(text)

    def memory_thresholds(self, capacity: int) -> list[int]:
        """Every ``memory.available`` threshold, hard and soft, in bytes: the levels the kubelet's memcg threshold
        notifiers watch with ``kernelMemcgNotification``."""
        out = []
        for section in ("evictionHard", "evictionSoft"):
            value = (self.config.get(section) or {}).get("memory.available")
            if value is None:
                continue
            text = str(value).strip()
            out.append(int(parse_quantity(text[:-1]) * capacity / 100) if text.endswith("%") else parse_amount(text))
        return out

    @property
    def memcg_notification(self) -> bool:
        return bool(self.config.get("kernelMemcgNotification", False))

    @property
    def enforces_pods(self) -> bool:
        return "pods" in (self.config.get("enforceNodeAllocatable") or ["pods"])


def default_eviction_hard(minor: int) -> dict[str, str]:
    """eviction/defaults_linux.go: DefaultEvictionHard (``imagefs.inodesFree`` from 1.30, PR #121834)."""
    out = {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
    }
    if minor >= 30:
        out["imagefs.inodesFree"] = "5%"
    return out


def parse_version(doc: Located, path: YPath, value: Any) -> tuple[str, int]:
    """``v1.30.0`` (or ``1.30``, ``master``) → (the kubeletVersion string, the minor)."""
    if value == "master":
        return "v1.38.0-alpha.0", 38
    text = str(value) if isinstance(value, str | float) else None
    m = _VERSION.match(text) if text is not None else None
    if m is None or not 26 <= int(m.group(1)) <= 38:
        hint = " (quote it: YAML reads 1.30 as the number 1.3)" if isinstance(value, float) else ""
        raise doc.error(f"expected a kubelet version from v1.26 to v1.37 (or master), got {value!r}{hint}", path)
    minor = int(m.group(1))
    if text is not None and text.count(".") == 1 and not text.startswith("v"):
        return f"v{text}.0", minor
    return (text if text and text.startswith("v") else f"v{text}"), minor


def parse_kubelet(doc: Located, path: YPath, body: Any) -> KubeletSettings:
    """The ``kubelet:`` section: version, then ``config`` (KubeletConfiguration fields) and/or ``flags``."""
    if not isinstance(body, Mapping):
        raise doc.error("expected a mapping with version, config and/or flags", path)
    for key in body:
        if key not in ("version", "config", "flags"):
            raise doc.error(f"unknown field {key!r}; expected version, config, flags", (*path, key), key=True)
    if "version" not in body:
        raise doc.error("the kubelet needs a version (e.g. v1.30.0): the eviction logic differs by release", path)
    version, minor = parse_version(doc, (*path, "version"), body["version"])
    config: dict[str, Any] = {}
    raw_config = body.get("config") or {}
    if not isinstance(raw_config, Mapping):
        raise doc.error("expected KubeletConfiguration fields", (*path, "config"))
    for key, value in raw_config.items():
        if key not in CONFIG_FIELDS:
            raise doc.error(
                f"unknown or unsupported KubeletConfiguration field {key!r}; supported: {', '.join(CONFIG_FIELDS[2:])}",
                (*path, "config", key),
                key=True,
            )
        config[key] = value
    _flags(doc, (*path, "flags"), body.get("flags"), config)
    _check_config(doc, (*path, "config"), config, minor)
    hard = config.get("evictionHard")
    if hard is None:
        hard = default_eviction_hard(minor)
    elif config.get("mergeDefaultEvictionSettings") is True:
        hard = {**default_eviction_hard(minor), **hard}
    effective: dict[str, Any] = {
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "evictionHard": {k: str(v) for k, v in hard.items()},
        "evictionPressureTransitionPeriod": format_duration(
            parse_duration(config.get("evictionPressureTransitionPeriod", "5m0s"))
        ),
        "evictionMaxPodGracePeriod": int(config.get("evictionMaxPodGracePeriod", 0)),
        "enforceNodeAllocatable": list(config.get("enforceNodeAllocatable", ["pods"])),
        "localStorageCapacityIsolation": bool(config.get("localStorageCapacityIsolation", True)),
    }
    for key in ("evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim", "kubeReserved", "systemReserved"):
        if config.get(key):
            effective[key] = {k: str(v) for k, v in config[key].items()}
    if "mergeDefaultEvictionSettings" in config:
        effective["mergeDefaultEvictionSettings"] = bool(config["mergeDefaultEvictionSettings"])
    if "kernelMemcgNotification" in config:
        effective["kernelMemcgNotification"] = bool(config["kernelMemcgNotification"])
    gates = {str(k): bool(v) for k, v in (config.get("featureGates") or {}).items()}
    if gates:
        effective["featureGates"] = gates
    return KubeletSettings(version, minor, effective, gates)


def _flags(doc: Located, path: YPath, flags: Any, config: dict[str, Any]) -> None:
    """``["--eviction-hard=memory.available<1Gi", "kube-reserved=memory=200Mi"]`` → config fields."""
    if flags is None:
        return
    if not isinstance(flags, list):
        raise doc.error("expected a list of kubelet flags such as --eviction-hard=memory.available<1Gi", path)
    seen: dict[str, YPath] = {}
    for i, flag in enumerate(flags):
        where = (*path, i)
        if not isinstance(flag, str) or "=" not in flag:
            raise doc.error(f"expected --NAME=VALUE, got {flag!r}", where)
        name, _, value = flag.lstrip("-").partition("=")
        if name == "kubelet-arg":  # k3d/k3s: --kubelet-arg=eviction-hard=memory.available<1Gi[@agent:*]
            name, _, value = value.lstrip("-").partition("=")
            value = re.sub(r"@(server|agent|servers|agents|all|loadbalancer)(:[^@]*)?$", "", value)
        if name not in FLAGS:
            raise doc.error(
                f"unknown or unsupported kubelet flag --{name}; supported: {', '.join('--' + f for f in FLAGS)}", where
            )
        key, syntax = FLAGS[name]
        if key in config and key not in seen:
            raise doc.error(f"--{name} and config.{key} both set; use one", where)
        seen[key] = where
        if syntax in ("<", "="):
            target = config.setdefault(key, {})
            for pair in filter(None, (p.strip() for p in value.split(","))):
                k, sep, v = pair.partition(syntax)
                if not sep:
                    raise doc.error(f"malformed pair {pair!r} in --{name}, expect KEY{syntax}VALUE", where)
                target[k.strip()] = v.strip()
        elif syntax == "int":
            try:
                config[key] = int(value)
            except ValueError:
                raise doc.error(f"expected an integer number of seconds, got {value!r}", where) from None
        elif syntax == "duration":
            config[key] = value
        elif syntax == "list":
            config[key] = [v.strip() for v in value.split(",") if v.strip()]
        else:
            gates = config.setdefault(key, {})
            for item in filter(None, (p.strip() for p in value.split(","))):
                k, sep, v = item.partition("=")
                if not sep or v.strip().lower() not in ("true", "false"):
                    raise doc.error(f"expected NAME=true|false in --feature-gates, got {item!r}", where)
                gates[k.strip()] = v.strip().lower() == "true"


def _check_config(doc: Located, path: YPath, config: Mapping[str, Any], minor: int) -> None:
    for key in ("evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim"):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise doc.error("expected a map of signal to value", (*path, key))
        for signal, v in value.items():
            where = (*path, key, signal)
            if signal not in SIGNALS:
                raise doc.error(
                    f"unknown eviction signal {signal!r}; expected one of {', '.join(SIGNALS)}", where, key=True
                )
            text = str(v).strip() if isinstance(v, str | int | float) and not isinstance(v, bool) else None
            try:
                if text is None:
                    raise ValueError(f"expected a quantity or percentage, got {v!r}")
                if key == "evictionSoftGracePeriod":
                    parse_duration(text)
                elif text.endswith("%"):
                    pct = parse_quantity(text[:-1])
                    if not 0 <= pct <= 100:
                        raise ValueError(f"expected a percentage from 0% to 100%, got {text}")
                else:
                    parse_amount(text)
            except ValueError as exc:
                raise doc.error(str(exc), where) from None
    soft, grace = config.get("evictionSoft") or {}, config.get("evictionSoftGracePeriod") or {}
    for signal in soft:
        if signal not in grace:
            raise doc.error(
                f"evictionSoft {signal} needs a grace period in evictionSoftGracePeriod",
                (*path, "evictionSoft", signal),
            )
    for key in ("kubeReserved", "systemReserved"):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise doc.error("expected a map of resource to quantity", (*path, key))
        for resource, v in value.items():
            try:
                parse_amount(v)
            except ValueError as exc:
                raise doc.error(str(exc), (*path, key, resource)) from None
    if "evictionPressureTransitionPeriod" in config:
        try:
            parse_duration(config["evictionPressureTransitionPeriod"])
        except ValueError as exc:
            raise doc.error(str(exc), (*path, "evictionPressureTransitionPeriod")) from None
    memcg = config.get("kernelMemcgNotification", False)
    if not isinstance(memcg, bool):
        raise doc.error(f"expected true or false, got {memcg!r}", (*path, "kernelMemcgNotification"))
    grace_max = config.get("evictionMaxPodGracePeriod", 0)
    if isinstance(grace_max, bool) or not isinstance(grace_max, int) or grace_max < 0:
        raise doc.error(f"expected a whole number of seconds, got {grace_max!r}", (*path, "evictionMaxPodGracePeriod"))
    allocatable = config.get("enforceNodeAllocatable", ["pods"])
    if not isinstance(allocatable, list) or not all(isinstance(x, str) for x in allocatable):
        raise doc.error("expected a list such as [pods]", (*path, "enforceNodeAllocatable"))
    if "mergeDefaultEvictionSettings" in config and minor < 33:
        raise doc.error(
            f"mergeDefaultEvictionSettings is not a field of kubelet 1.{minor} (added in 1.33)",
            (*path, "mergeDefaultEvictionSettings"),
            key=True,
        )
    gates = config.get("featureGates")
    if gates is not None and (not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values())):
        raise doc.error("expected a map of gate name to true/false", (*path, "featureGates"))
