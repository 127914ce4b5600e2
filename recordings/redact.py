"""Keep-list redaction of pods, nodes, events and /configz before anything reaches disk.

A keep-list, not a drop-list: a field is stored only if the eviction logic (ranking, QoS,
critical/static pod checks, emptyDir and ephemeral-storage limits, node conditions) or the
ground truth needs it.  So env values, command args, images, secret/configmap data, labels
and the last-applied annotation can never leak through a field nobody thought of.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Annotations the kubelet reads to tell static and mirror pods apart (types/pod_update.go).
KEEP_ANNOTATIONS = frozenset(
    {
        "kubernetes.io/config.source",
        "kubernetes.io/config.mirror",
        "kubernetes.io/config.hash",
        "kubernetes.io/config.seen",
    }
)
EVENT_REASONS = frozenset(
    {
        "Evicted",
        "EvictionThresholdMet",
        "Preempting",
        "FreeDiskSpaceFailed",
        "ImageGCFailed",
        "NodeHasDiskPressure",
        "NodeHasNoDiskPressure",
        "NodeHasInsufficientMemory",
        "NodeHasSufficientMemory",
        "NodeHasInsufficientPID",
        "NodeHasSufficientPID",
        "Starting",
        # the kubelet's OOM watcher (pkg/kubelet/oom/oom_watcher_linux.go): a kernel kill on the node, on the Node
        "SystemOOM",
    }
)
_SECRET_CONFIG_KEYS = frozenset({"staticPodURLHeader"})


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pick(obj: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(obj, Mapping):
        return {}
    return {k: obj[k] for k in keys if k in obj and obj[k] is not None}


def _metadata(meta: Any, *, annotations: bool) -> dict[str, Any]:
    out = _pick(
        meta,
        (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ),
    )
    if isinstance(meta, Mapping):
        owners = meta.get("ownerReferences")
        if isinstance(owners, list):
            out["ownerReferences"] = [_pick(o, ("apiVersion", "kind", "name", "uid", "controller")) for o in owners]
        ann = meta.get("annotations")
        if annotations and isinstance(ann, Mapping):
            kept = {k: v for k, v in ann.items() if k in KEEP_ANNOTATIONS}
            if kept:
                out["annotations"] = kept
    return out


def _container(c: Any) -> dict[str, Any]:
    return _pick(c, ("name", "resources", "restartPolicy", "resizePolicy"))


def _state(state: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(state, Mapping):
        for phase, fields in (
            ("running", ("startedAt",)),
            ("waiting", ("reason",)),
            ("terminated", ("exitCode", "signal", "reason", "startedAt", "finishedAt")),
        ):
            if isinstance(state.get(phase), Mapping):
                out[phase] = _pick(state[phase], fields)
    return out


def _container_status(s: Any) -> dict[str, Any]:
    out = _pick(s, ("name", "ready", "started", "restartCount", "resources", "allocatedResources", "containerID"))
    if isinstance(s, Mapping):
        for key in ("state", "lastState"):
            if key in s:
                out[key] = _state(s[key])
    return out


def _volume(v: Any) -> dict[str, Any]:
    """Name and source kind of a volume: the disk ranking counts hostPath, gitRepo, configMap and
    default-medium emptyDir volumes (helpers.go: localVolumeNames). Only emptyDir keeps details."""
    out = _pick(v, ("name",))
    if isinstance(v, Mapping):
        for kind, source in v.items():
            if kind == "name" or source is None:
                continue
            if kind == "emptyDir" and isinstance(source, Mapping):
                out["emptyDir"] = _pick(source, ("medium", "sizeLimit"))
            else:
                out[kind] = {}
    return out


def redact_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    spec = _mapping(pod.get("spec"))
    status = _mapping(pod.get("status"))
    out_spec = _pick(
        spec,
        (
            "nodeName",
            "priority",
            "priorityClassName",
            "preemptionPolicy",
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "overhead",
            "resources",
        ),
    )
    for key in ("initContainers", "containers", "ephemeralContainers"):
        if isinstance(spec.get(key), list):
            out_spec[key] = [_container(c) for c in spec[key]]
    # the OS the pod demands: names a node's platform when no Node object was recorded (a Windows capture)
    if isinstance(spec.get("os"), Mapping):
        out_spec["os"] = _pick(spec["os"], ("name",))
    selector = _mapping(spec.get("nodeSelector"))
    if "kubernetes.io/os" in selector:
        out_spec["nodeSelector"] = {"kubernetes.io/os": selector["kubernetes.io/os"]}
    if isinstance(spec.get("volumes"), list):
        out_spec["volumes"] = [_volume(v) for v in spec["volumes"]]
    out_status = _pick(status, ("phase", "reason", "message", "qosClass", "startTime", "resize"))
    if isinstance(status.get("conditions"), list):
        out_status["conditions"] = [
            _pick(c, ("type", "status", "reason", "lastTransitionTime")) for c in status["conditions"]
        ]
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        if isinstance(status.get(key), list):
            out_status[key] = [_container_status(s) for s in status[key]]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(pod.get("metadata"), annotations=True),
        "spec": out_spec,
        "status": out_status,
    }


def redact_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """Node capacity, allocatable, conditions (without heartbeats, which change every few
    seconds and would make every poll a "change"), taints and versions."""
    meta = node.get("metadata")
    out_meta = _metadata(meta, annotations=False)
    out_meta.pop("resourceVersion", None)
    if isinstance(meta, Mapping) and isinstance(meta.get("labels"), Mapping):
        out_meta["labels"] = dict(meta["labels"])
    spec = _mapping(node.get("spec"))
    status = _mapping(node.get("status"))
    out_status = _pick(status, ("capacity", "allocatable"))
    if isinstance(status.get("conditions"), list):
        out_status["conditions"] = [
            _pick(c, ("type", "status", "reason", "message", "lastTransitionTime")) for c in status["conditions"]
        ]
    out_status["nodeInfo"] = _pick(
        status.get("nodeInfo"),
        (
            "kubeletVersion",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "operatingSystem",
            "architecture",
            "bootID",
        ),
    )
    if isinstance(status.get("daemonEndpoints"), Mapping):
        out_status["daemonEndpoints"] = status["daemonEndpoints"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": out_meta,
        "spec": _pick(spec, ("taints", "unschedulable")),
        "status": out_status,
    }


def redact_event(event: Mapping[str, Any]) -> dict[str, Any]:
    out = _pick(
        event,
        (
            "reason",
            "message",
            "type",
            "count",
            "firstTimestamp",
            "lastTimestamp",
            "eventTime",
            "reportingComponent",
            "reportingInstance",
            "action",
        ),
    )
    out["metadata"] = _metadata(event.get("metadata"), annotations=False)
    out["involvedObject"] = _pick(event.get("involvedObject"), ("kind", "namespace", "name", "uid", "fieldPath"))
    out["source"] = _pick(event.get("source"), ("component", "host"))
    return {"apiVersion": "v1", "kind": "Event", **out}


def redact_configz(configz: Mapping[str, Any]) -> dict[str, Any]:
    """The whole kubelet configuration except header values that may carry credentials."""

    def scrub(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: ({} if k in _SECRET_CONFIG_KEYS else scrub(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return dict(scrub(configz))


REDACTORS = {"pod": redact_pod, "node": redact_node, "event": redact_event, "configz": redact_configz}
