"""The scenario file: its schema, and the loader that turns YAML into a checked :class:`Scenario`.

Every check names the file, the line and the field (``x.yaml: line 12: pods[0].usage.el9: …``):
a scenario is written by hand, so "which line is wrong" is the whole error message. All
validation happens here, before any output exists, so a bad file never leaves a half-written
recording behind. The field reference is recordings/SCENARIOS.md.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kube.errors import InputError

from ..documents import MAX_SCENARIO_FILE_BYTES, load_document, read_bounded
from ..summary_codec import parse_time
from .curves import Constant, Curve, parse_curve
from .errors import ScenarioError
from .kubelet import FLAGS, KubeletSettings, parse_kubelet
from .units import SECOND, parse_amount, parse_duration
from .yamlpos import Located, dotted, load_yaml
from .yamlpos import Path as YPath

DEFAULT_START = "2025-01-01T00:00:00Z"
MAX_TICKS = 100_000
# The times a scenario's recording can write: four-digit RFC 3339 years (strftime writes the year
# 999 as "999"; past 9999 Python's datetime ends).  The generated kubelets start an hour before
# the scenario (their summaries' startTime).
FIRST_TIME = "1000-01-01T00:00:00Z"
LAST_TIME = "9999-12-31T23:59:59Z"
KUBELET_HEAD_START = 3600 * SECOND

CONTAINER_FIELDS = ("memory", "rootfs", "logs", "rootfsInodes", "logsInodes", "processes", "runFor")
VOLUME_FIELDS = ("used", "inodes")
SYSTEM_FIELDS = ("memory", "nodefs", "nodefsInodes", "imagefs", "imagefsInodes", "processes")
NODE_FIELDS = ("name", "capacity", "allocatable", "filesystems", "system", "maxPids", "labels", "kubelet")
POD_FIELDS = ("pod", "file", "name", "node", "start", "usage", "volumes", "recreate")
TOP_FIELDS = ("apiVersion", "kind", "name", "description", "start", "interval", "duration", "kubelet", "nodes", "pods")
# Volumes whose bytes count toward a pod's ephemeral storage (pkg/kubelet/stats: calcEphemeralStorage)
EPHEMERAL_SOURCES = frozenset({"emptyDir", "configMap", "secret", "downwardAPI", "projected", "gitRepo"})
ZERO: Curve = Constant(0)
ONE: Curve = Constant(1)
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True)
class ContainerUsage:
    memory: Curve = ZERO
    rootfs: Curve = ZERO
    logs: Curve = ZERO
    rootfs_inodes: Curve = ZERO
    logs_inodes: Curve = ZERO
    processes: Curve = ONE
    run_for: int | None = None
    """Microseconds until the container exits (init containers: until the next one starts)."""


@dataclass(frozen=True)
class VolumeUsage:
    used: Curve = ZERO
    inodes: Curve = ZERO


@dataclass(frozen=True)
class PodTemplate:
    """One pod of the scenario: its manifest and how its containers and volumes use resources."""

    manifest: Mapping[str, Any]
    node: str
    start: int
    containers: Mapping[str, ContainerUsage]
    volumes: Mapping[str, VolumeUsage]
    recreate_after: int | None
    line: int | None = None

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.manifest["metadata"].get("namespace") or "default")


@dataclass(frozen=True)
class Filesystem:
    capacity: int
    inodes: int


@dataclass(frozen=True)
class SystemUsage:
    """What the node uses outside pods (OS, kubelet, runtime, images)."""

    memory: Curve = ZERO
    nodefs: Curve = ZERO
    nodefs_inodes: Curve = ZERO
    imagefs: Curve = ZERO
    imagefs_inodes: Curve = ZERO
    processes: Curve = ZERO


@dataclass(frozen=True)
class NodeSpec:
    name: str
    kubelet: KubeletSettings
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    memory_capacity: int
    pods_memory_limit: int | None
    """The kubepods cgroup limit (the Summary's ``pods`` container); None when not enforced."""
    nodefs: Filesystem
    imagefs: Filesystem | None
    split: bool
    """Writable layers on nodefs while images sit on a dedicated imagefs (KEP-4191)."""
    max_pids: int
    system: SystemUsage
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def dedicated_image_fs(self) -> bool:
        return self.imagefs is not None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    file: str
    digest: str
    start: int
    interval: int
    duration: int
    nodes: tuple[NodeSpec, ...]
    pods: tuple[PodTemplate, ...]
    document: bytes = field(default=b"", repr=False, compare=False)
    """The scenario file as read (what a recording keeps to regenerate its closed loop)."""
    files: Mapping[str, bytes] = field(default_factory=dict, repr=False, compare=False)
    """The files the document names (``file:`` of a pod entry or a ``series`` curve), by the name it gives."""

    @property
    def tick_count(self) -> int:
        return self.duration // self.interval + 1

    def node(self, name: str) -> NodeSpec:
        return next(n for n in self.nodes if n.name == name)


def load_scenario(
    path: str | Path, *, kubelet_version: str | None = None, kubelet_flags: Sequence[str] = ()
) -> Scenario:
    """Read and check a scenario file; :class:`ScenarioError` (one line) if anything is wrong.

    ``kubelet_version`` replaces every node's kubelet version (defaults follow the new version);
    ``kubelet_flags`` (``--eviction-hard=…``) replace the fields they set in every node's kubelet, as a
    command-line flag replaces its config-file field."""
    p = Path(path)
    try:
        data = read_bounded(p, str(path), MAX_SCENARIO_FILE_BYTES, "a scenario file")
    except InputError as exc:
        raise ScenarioError(exc.problem, source=str(path)) from None
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario ({exc.strerror})", source=str(path)) from None
    return parse_scenario(
        data, file=str(path), base_dir=p.resolve().parent, kubelet_version=kubelet_version, kubelet_flags=kubelet_flags
    )


def parse_scenario(
    data: bytes,
    *,
    file: str,
    base_dir: Path | None,
    kubelet_version: str | None = None,
    kubelet_flags: Sequence[str] = (),
) -> Scenario:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("not UTF-8 text", source=file) from None
    doc = load_yaml(text, file)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    scenario = _Loader(doc, base_dir, digest, kubelet_version, tuple(kubelet_flags)).scenario()
    files = {}
    if base_dir is not None:
        for name in sorted(_named_files(doc.data)):
            try:
                files[name] = (base_dir / name).read_bytes()
            except OSError:
                continue  # the loader read every file it needed: this one is not one of them
    return replace(scenario, document=data, files=files)


def _named_files(data: Any) -> set[str]:
    """Every ``file: NAME`` in the document (a pod entry's or a series curve's)."""
    out: set[str] = set()
    if isinstance(data, Mapping):
        for key, value in data.items():
            if key == "file" and isinstance(value, str):
                out.add(value)
            else:
                out |= _named_files(value)
    elif isinstance(data, list):
        for item in data:
            out |= _named_files(item)
    return out


def _flag_key(flag: Any) -> str | None:
    """The KubeletConfiguration field a ``--name=value`` flag sets (k3d's ``--kubelet-arg=`` form too)."""
    if not isinstance(flag, str):
        return None
    name, _, value = flag.lstrip("-").partition("=")
    if name == "kubelet-arg":
        name = value.lstrip("-").partition("=")[0]
    return FLAGS[name][0] if name in FLAGS else None


class _Loader:
    def __init__(
        self,
        doc: Located,
        base_dir: Path | None,
        digest: str,
        kubelet_version: str | None,
        kubelet_flags: tuple[str, ...] = (),
    ) -> None:
        self.doc = doc
        self.base_dir = base_dir
        self.digest = digest
        self.kubelet_version = kubelet_version
        self.kubelet_flags = kubelet_flags

    def kubelet(self, body: Any, path: YPath) -> KubeletSettings:
        if self.kubelet_version is not None and isinstance(body, Mapping):
            body = {**body, "version": self.kubelet_version}
        kept = 0
        if self.kubelet_flags and isinstance(body, Mapping):
            replaced = {_flag_key(f) for f in self.kubelet_flags} - {None}
            config = body.get("config")
            flags = body.get("flags")
            kept_flags = [f for f in flags if _flag_key(f) not in replaced] if isinstance(flags, list) else []
            kept = len(kept_flags)
            body = {**body, "flags": [*kept_flags, *self.kubelet_flags]}
            if isinstance(config, Mapping):
                body["config"] = {k: v for k, v in config.items() if k not in replaced}
        try:
            return parse_kubelet(self.doc, path, body)
        except ScenarioError as err:
            if self.kubelet_version is not None and err.field == dotted((*path, "version")):
                raise ScenarioError(err.problem, source="--kubelet-version") from None
            for i, flag in enumerate(self.kubelet_flags):
                key = _flag_key(flag)
                at_flag = err.field == dotted((*path, "flags", kept + i))
                in_field = key is not None and (err.field or "").startswith(dotted((*path, "config", key)))
                if at_flag or in_field:
                    raise ScenarioError(err.problem, source=flag.partition("=")[0]) from None
            raise

    def written_hard_memory(self, node_body: Mapping[str, Any], path: YPath, memory: int) -> int:
        """The node's hard ``memory.available`` threshold as the file writes it (no command-line override)."""
        if "kubelet" in node_body:
            raw, where = node_body["kubelet"], (*path, "kubelet")
        else:
            raw, where = self.doc.data.get("kubelet"), ("kubelet",)
        return parse_kubelet(self.doc, where, raw).hard_threshold("memory.available", memory)

    def err(self, problem: str, path: YPath, *, key: bool = False) -> ScenarioError:
        return self.doc.error(problem, path, key=key)

    def mapping(self, value: Any, path: YPath, fields: Sequence[str], what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.err(f"expected {what} (a mapping with {', '.join(fields)})", path)
        for key in value:
            if key not in fields:
                raise self.err(f"unknown field {key!r}; expected one of {', '.join(fields)}", (*path, key), key=True)
        return value

    def duration(self, value: Any, path: YPath) -> int:
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise self.err(str(exc), path) from None

    def amount(self, value: Any, path: YPath) -> int:
        try:
            return parse_amount(value)
        except ValueError as exc:
            raise self.err(str(exc), path) from None

    def curve(self, value: Any, path: YPath) -> Curve:
        return parse_curve(self.doc, path, value, self.base_dir)

    # -- top level -----------------------------------------------------------------------
    def scenario(self) -> Scenario:
        top = self.mapping(self.doc.data, (), TOP_FIELDS, "a scenario")
        if top.get("kind", "Scenario") != "Scenario":
            raise self.err(f"expected kind Scenario, got {top.get('kind')!r}", ("kind",))
        name = top.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.err(f"expected a name of lowercase letters, digits and '-', got {name!r}", ("name",))
        description = top.get("description", "")
        if not isinstance(description, str):
            raise self.err("expected text", ("description",))
        start_text = top.get("start", DEFAULT_START)
        try:
            start = parse_time(str(start_text).replace(" ", "T"))
        except ValueError:
            problem = f"expected an RFC 3339 time such as {DEFAULT_START}, got {start_text!r}"
            raise self.err(problem, ("start",)) from None
        interval = self.duration(top.get("interval", "10s"), ("interval",))
        if interval < SECOND or interval % SECOND:
            raise self.err(
                "expected a whole number of seconds ≥ 1s (the Summary API has second resolution)", ("interval",)
            )
        if "duration" not in top:
            raise self.err("a scenario needs a duration (e.g. 5m)", ())
        duration = self.duration(top["duration"], ("duration",))
        if duration // interval + 1 > MAX_TICKS:
            raise self.err(f"{duration // interval + 1} ticks; at most {MAX_TICKS}", ("duration",))
        if start - KUBELET_HEAD_START < parse_time(FIRST_TIME) or start + duration > parse_time(LAST_TIME):
            shown = start_text.isoformat() if hasattr(start_text, "isoformat") else start_text  # YAML reads datetimes
            problem = (
                f"a scenario from {shown} for {top['duration']} leaves the times a recording can "
                f"hold: from {FIRST_TIME} plus 1h (the kubelets start an hour early) to {LAST_TIME}"
            )
            raise self.err(problem, ("start",))
        default_kubelet = self.kubelet(top["kubelet"], ("kubelet",)) if "kubelet" in top else None
        nodes_raw = top.get("nodes")
        if not isinstance(nodes_raw, list) or not nodes_raw:
            raise self.err("expected a list of at least one node", ("nodes",))
        nodes = tuple(self.node(n, ("nodes", i), default_kubelet) for i, n in enumerate(nodes_raw))
        names = [n.name for n in nodes]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.err(f"node {n} is listed twice", ("nodes", i, "name"))
        pods_raw = top.get("pods", [])
        if not isinstance(pods_raw, list):
            raise self.err("expected a list of pods", ("pods",))
        pods: list[PodTemplate] = []
        for i, entry in enumerate(pods_raw):
            pods.extend(self.pods(entry, ("pods", i), names))
        seen: dict[tuple[str, str], int] = {}
        for pod in pods:
            key = (pod.namespace, pod.name)
            if key in seen:
                raise self.err(f"pod {pod.namespace}/{pod.name} is defined twice", ("pods",))
            seen[key] = 1
        return Scenario(
            name, description.strip(), self.doc.file, self.digest, start, interval, duration, nodes, tuple(pods)
        )

    # -- nodes ---------------------------------------------------------------------------
    def node(self, raw: Any, path: YPath, default_kubelet: KubeletSettings | None) -> NodeSpec:
        body = self.mapping(raw, path, NODE_FIELDS, "a node")
        name = body.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.err(
                f"expected a node name of lowercase letters, digits, '-' and '.', got {name!r}", (*path, "name")
            )
        if "kubelet" in body:
            kubelet = self.kubelet(body["kubelet"], (*path, "kubelet"))
        elif default_kubelet is not None:
            kubelet = default_kubelet
        else:
            raise self.err("no kubelet: give a top-level kubelet (version, config or flags) or one per node", path)
        capacity = self.resources(body.get("capacity"), (*path, "capacity"))
        if "memory" not in capacity:
            raise self.err("node capacity needs memory", (*path, "capacity"))
        memory = self.amount(capacity["memory"], (*path, "capacity", "memory"))
        fs_raw = self.mapping(
            body.get("filesystems", {}), (*path, "filesystems"), ("nodefs", "imagefs", "containerfs"), "filesystems"
        )
        nodefs_default = capacity.get("ephemeral-storage")
        nodefs = self.filesystem(fs_raw.get("nodefs"), (*path, "filesystems", "nodefs"), nodefs_default)
        imagefs = None
        if fs_raw.get("imagefs") is not None:
            imagefs = self.filesystem(fs_raw["imagefs"], (*path, "filesystems", "imagefs"), None)
        containerfs = fs_raw.get("containerfs", "imagefs" if imagefs else "nodefs")
        if containerfs not in ("nodefs", "imagefs"):
            raise self.err(f"expected nodefs or imagefs, got {containerfs!r}", (*path, "filesystems", "containerfs"))
        if containerfs == "imagefs" and imagefs is None:
            raise self.err("containerfs: imagefs needs a dedicated imagefs", (*path, "filesystems", "containerfs"))
        split = imagefs is not None and containerfs == "nodefs"
        capacity = dict(capacity)
        capacity.setdefault("ephemeral-storage", _bytes_text(nodefs.capacity))
        capacity.setdefault("pods", "110")
        capacity.setdefault("cpu", "8")
        reserved_mem = kubelet.reserved("memory")
        hard_mem = kubelet.hard_threshold("memory.available", memory)
        storage = self.amount(capacity["ephemeral-storage"], (*path, "capacity", "ephemeral-storage"))
        if "allocatable" in body:
            allocatable = dict(self.resources(body["allocatable"], (*path, "allocatable")))
            for key, value in capacity.items():
                allocatable.setdefault(key, value)
            alloc_mem = self.amount(allocatable["memory"], (*path, "allocatable", "memory"))
            # what the node reserves is capacity − allocatable − the hard threshold *as written*; a new hard
            # threshold (a --eviction-hard override) keeps that fixed and moves allocatable with it, as a
            # kubelet restarted with the flag reports it (node_container_manager_linux.go: GetNodeAllocatable)
            written = self.written_hard_memory(body, path, memory)
            pods_limit = alloc_mem + written
            if written != hard_mem:
                allocatable["memory"] = _bytes_text(max(0, pods_limit - hard_mem))
        else:
            pods_limit = max(0, memory - reserved_mem)
            allocatable = dict(capacity)
            allocatable["memory"] = _bytes_text(max(0, pods_limit - hard_mem))
            hard_storage = kubelet.hard_threshold("nodefs.available", storage)
            allocatable["ephemeral-storage"] = _bytes_text(
                max(0, storage - kubelet.reserved("ephemeral-storage") - hard_storage)
            )
        system = self.system(body.get("system", {}), (*path, "system"))
        max_pids = self.amount(body.get("maxPids", 4194304), (*path, "maxPids"))
        labels = body.get("labels", {})
        if not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values()):
            raise self.err("expected a map of label to text", (*path, "labels"))
        return NodeSpec(
            name,
            kubelet,
            capacity,
            allocatable,
            memory,
            pods_limit if kubelet.enforces_pods else None,
            nodefs,
            imagefs,
            split,
            max_pids,
            system,
            dict(labels),
        )

    def resources(self, raw: Any, path: YPath) -> Mapping[str, str]:
        if not isinstance(raw, Mapping):
            raise self.err("expected a map of resource to quantity (memory: 8Gi, ephemeral-storage: 100Gi …)", path)
        out = {}
        for key, value in raw.items():
            self.amount(value, (*path, key))
            out[str(key)] = str(value)
        return out

    def filesystem(self, raw: Any, path: YPath, default_capacity: str | None) -> Filesystem:
        if raw is None:
            if default_capacity is None:
                raise self.err("give filesystems.nodefs.capacity or capacity.ephemeral-storage", path)
            raw = {"capacity": default_capacity}
        body = self.mapping(raw, path, ("capacity", "inodes"), "a filesystem")
        if "capacity" not in body:
            raise self.err("a filesystem needs a capacity", path)
        capacity = self.amount(body["capacity"], (*path, "capacity"))
        inodes = self.amount(body.get("inodes", max(1, capacity // 16384)), (*path, "inodes"))
        return Filesystem(capacity, inodes)

    def system(self, raw: Any, path: YPath) -> SystemUsage:
        body = self.mapping(raw, path, SYSTEM_FIELDS, "the system share")
        return SystemUsage(**{_snake(k): self.curve(v, (*path, k)) for k, v in body.items()})

    # -- pods ----------------------------------------------------------------------------
    def pods(self, raw: Any, path: YPath, nodes: list[str]) -> list[PodTemplate]:
        body = self.mapping(raw, path, POD_FIELDS, "a pod entry")
        if ("pod" in body) == ("file" in body):
            raise self.err(
                "a pod entry needs exactly one of pod (a Pod manifest) or file (kubectl get pods -o json)", path
            )
        if "pod" in body:
            manifests = [(body["pod"], (*path, "pod"))]
            if "name" in body:
                raise self.err(
                    "name selects a pod from a file; an inline pod has metadata.name", (*path, "name"), key=True
                )
        else:
            manifests = self.pods_file(body["file"], (*path, "file"), body.get("name"))
        start = self.duration(body.get("start", 0), (*path, "start"))
        recreate = None
        if "recreate" in body:
            rec = self.mapping(body["recreate"], (*path, "recreate"), ("after",), "recreate")
            recreate = self.duration(rec.get("after", "0s"), (*path, "recreate", "after"))
        out = []
        for manifest, where in manifests:
            pod = self.manifest(manifest, where)
            node = body.get("node") or pod["spec"].get("nodeName")
            if node is None:
                if len(nodes) != 1:
                    raise self.err("which node? set node: (or spec.nodeName)", path)
                node = nodes[0]
            if node not in nodes:
                raise self.err(
                    f"no node {node!r} in the scenario (nodes: {', '.join(nodes)})",
                    (*path, "node") if "node" in body else where,
                )
            pod["spec"]["nodeName"] = node
            if recreate is not None and not _controller(pod):
                raise self.err(
                    "recreate needs a controller-owned pod (metadata.ownerReferences with controller: "
                    "true); a bare pod evicted for node pressure stays Failed",
                    (*path, "recreate"),
                )
            containers = self.usage(body.get("usage", {}), (*path, "usage"), pod)
            volumes = self.volume_usage(body.get("volumes", {}), (*path, "volumes"), pod)
            out.append(PodTemplate(pod, node, start, containers, volumes, recreate, self.doc.line(path)))
        return out

    def pods_file(self, name: Any, path: YPath, select: Any) -> list[tuple[Any, YPath]]:
        if not isinstance(name, str) or not name:
            raise self.err("expected a file name", path)
        if self.base_dir is None:
            raise self.err("a bundled scenario cannot read pod files", path)
        file = self.base_dir / name
        try:
            body = load_document(file)  # bounded, aliases checked, one line naming the file
        except InputError as exc:
            raise self.err(f"{name}: {exc.problem}", path) from None
        items: list[Any] = [body]
        if isinstance(body, Mapping) and isinstance(body.get("items"), list):
            items = body["items"]
        pods = [(item, (*path, f"{name}[{i}]")) for i, item in enumerate(items)]
        if select is not None:
            pods = [p for p in pods if isinstance(p[0], Mapping) and (p[0].get("metadata") or {}).get("name") == select]
            if not pods:
                raise self.err(f"no pod named {select!r} in {name}", (*path[:-1], "name"))
        if not pods:
            raise self.err(f"{name} holds no pods", path)
        return pods

    def manifest(self, raw: Any, path: YPath) -> dict[str, Any]:
        if not isinstance(raw, Mapping) or raw.get("kind", "Pod") != "Pod":
            raise self.err("expected a Pod manifest (kind: Pod, metadata, spec)", path)
        pod: dict[str, Any] = copy.deepcopy(dict(raw))
        meta = pod.setdefault("metadata", {})
        spec = pod.get("spec")
        if not isinstance(meta, dict) or not isinstance(spec, dict):
            raise self.err("a Pod needs metadata and spec mappings", path)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise self.err("a Pod needs metadata.name", (*path, "metadata"))
        meta.setdefault("namespace", "default")
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            raise self.err("a Pod needs at least one container", (*path, "spec"))
        for key in ("containers", "initContainers", "ephemeralContainers"):
            for i, c in enumerate(spec.get(key) or []):
                if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
                    raise self.err("a container needs a name", (*path, "spec", key, i))
                for section in ("requests", "limits"):
                    for res, q in ((c.get("resources") or {}).get(section) or {}).items():
                        self.amount(q, (*path, "spec", key, i, "resources", section, res))
        volumes = spec.get("volumes") or []
        if not isinstance(volumes, list):
            raise self.err("expected a list of volumes", (*path, "spec", "volumes"))
        for i, v in enumerate(volumes):
            if not isinstance(v, Mapping) or not isinstance(v.get("name"), str):
                raise self.err("a volume needs a name", (*path, "spec", "volumes", i))
            limit = (v.get("emptyDir") or {}).get("sizeLimit")
            if limit is not None:
                self.amount(limit, (*path, "spec", "volumes", i, "emptyDir", "sizeLimit"))
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        return pod

    def usage(self, raw: Any, path: YPath, pod: Mapping[str, Any]) -> dict[str, ContainerUsage]:
        if not isinstance(raw, Mapping):
            raise self.err("expected a map of container name to its usage", path)
        spec = pod["spec"]
        names = [
            c["name"]
            for c in [
                *(spec.get("initContainers") or []),
                *spec["containers"],
                *(spec.get("ephemeralContainers") or []),
            ]
        ]
        out = {}
        for cname, body in raw.items():
            where = (*path, cname)
            if cname not in names:
                raise self.err(
                    f"no container {cname!r} in pod {pod['metadata']['name']} (containers: {', '.join(names)})",
                    where,
                    key=True,
                )
            fields = self.mapping(body, where, CONTAINER_FIELDS, "a container's usage")
            values: dict[str, Any] = {}
            for key, value in fields.items():
                if key == "runFor":
                    values["run_for"] = self.duration(value, (*where, key))
                else:
                    values[_snake(key)] = self.curve(value, (*where, key))
            out[cname] = ContainerUsage(**values)
        return out

    def volume_usage(self, raw: Any, path: YPath, pod: Mapping[str, Any]) -> dict[str, VolumeUsage]:
        if not isinstance(raw, Mapping):
            raise self.err("expected a map of volume name to its usage", path)
        names = [v["name"] for v in pod["spec"].get("volumes") or []]
        out = {}
        for vname, body in raw.items():
            where = (*path, vname)
            if vname not in names:
                raise self.err(
                    f"no volume {vname!r} in pod {pod['metadata']['name']} (volumes: {', '.join(names) or 'none'})",
                    where,
                    key=True,
                )
            fields = self.mapping(body, where, VOLUME_FIELDS, "a volume's usage")
            out[vname] = VolumeUsage(**{k: self.curve(v, (*where, k)) for k, v in fields.items()})
        return out


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _bytes_text(value: int) -> str:
    return f"{value // 1024}Ki" if value % 1024 == 0 and value else str(value)


def _controller(pod: Mapping[str, Any]) -> bool:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("controller") for r in refs)
