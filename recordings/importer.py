"""``evictlens import``: files a user already has → a recording.

Accepts, in any mix and order: ``kubectl get --raw /api/v1/nodes/N/proxy/stats/summary``
outputs (one tick each, at the newest sample time inside unless ``FILE@TIME`` says
otherwise), ``kubectl get pods|nodes|events -o json`` (or YAML), kubelet ``/pods`` PodLists
and a ``/configz`` response or a KubeletConfiguration file.  The kind of each file is recognised from
its content.  Pods, nodes and configz are stored as observed at the earliest sample time of any summary
(not the tick time, the newest sample): the replay picks the pods in force at each pass's stats sample
time (memory's), which may be older than the summary's newest sample, and a snapshot's pod list must be
in force at every pass — a pod with no stats yet (crash-looping, first in the kubelet's line) included.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kube.errors import RecordingError

from .documents import load_document
from .format import MANIFEST, Manifest, RecordingBusyError, remove_tree, write_atomic
from .summary_codec import parse_time, project
from .writer import RecordingWriter, now_micros


@dataclass(frozen=True)
class Document:
    path: str
    kind: str
    body: Any
    at: int | None


def load_file(spec: str, *, kind: str | None = None) -> Document:
    """Read ``FILE`` or ``FILE@TIME`` (RFC 3339) and recognise what it holds; ``kind`` is what a flag
    (``--configz``, ``--config``, ``--events``) says the file must be."""
    path, at = spec, None
    if "@" in spec and not Path(spec).exists():
        path, _, when = spec.rpartition("@")
        try:
            at = parse_time(when)
        except ValueError:
            raise RecordingError(f"expected FILE@TIME with an RFC 3339 time, got {when!r}", source=spec) from None
    body = load_document(path)  # the tool's one JSON/YAML loader: exact big integers, timestamps stay strings
    if isinstance(body, dict) and body.get("kind") == "KubeletConfiguration":
        body = {"kubeletconfig": body}  # what /configz wraps the same v1beta1 document in
    found = _kind(body, path)
    if kind is not None and found != kind:
        raise RecordingError(f"expected {_EXPECTED[kind]}, got a {found} document", source=path)
    return Document(path, found, body, at)


_EXPECTED = {
    "configz": "a /configz response or a KubeletConfiguration",
    "events": "kubectl get events -A -o json (an event list)",
}


_LIST_KINDS = {"PodList": "pods", "NodeList": "nodes", "EventList": "events"}
_ITEM_KINDS = {"Pod": "pods", "Node": "nodes", "Event": "events"}


def _kind(body: Any, path: str) -> str:
    if isinstance(body, dict):
        if isinstance(body.get("node"), dict) and ("pods" in body or "nodeName" in body["node"]):
            return "summary"
        if isinstance(body.get("kubeletconfig"), dict):
            return "configz"
        kind = body.get("kind")
        if kind in _LIST_KINDS:
            return _LIST_KINDS[kind]
        if kind in _ITEM_KINDS:
            return _ITEM_KINDS[kind]
        if kind == "List" and isinstance(body.get("items"), list):
            kinds = {i.get("kind") or _shape(i) for i in body["items"] if isinstance(i, dict)}
            if len(kinds) == 1 and (only := kinds.pop()) in _ITEM_KINDS:
                return _ITEM_KINDS[only]
            if not body["items"]:
                return "empty"
        if kind is None:
            if isinstance(body.get("items"), list) and body["items"]:
                shapes = {
                    _shape(i)
                    if isinstance(i, dict) and not i.get("kind")
                    else (i.get("kind") if isinstance(i, dict) else None)
                    for i in body["items"]
                }
                if len(shapes) == 1 and (only := shapes.pop()) in _ITEM_KINDS:
                    return _ITEM_KINDS[only]
            elif (shape := _shape(body)) is not None:
                return _ITEM_KINDS[shape]
    raise RecordingError(
        "not a Summary API response, /configz response, or a Pod, Node or Event (list); "
        "expected JSON or YAML as printed by kubectl or the kubelet",
        source=path,
    )


def _shape(obj: Mapping[str, Any]) -> str | None:
    """The kind of an object saved without ``kind`` (OpenShift must-gather and insights archives), by shape:
    a Pod has ``spec.containers``, a Node ``status.nodeInfo`` (or node-only spec fields), an Event an
    ``involvedObject``. None when nothing matches."""
    if not isinstance(obj.get("metadata"), dict):
        return None
    spec, status = obj.get("spec"), obj.get("status")
    if isinstance(obj.get("involvedObject"), dict):
        return "Event"
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        return "Pod"
    if isinstance(status, dict) and isinstance(status.get("nodeInfo"), dict):
        return "Node"
    if isinstance(spec, dict) and any(k in spec for k in ("podCIDR", "podCIDRs", "providerID")):
        return "Node"
    return None


def _items(doc: Document) -> Iterator[Mapping[str, Any]]:
    body = doc.body
    items = body.get("items") if isinstance(body.get("items"), list) else [body]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordingError("expected a JSON object", source=doc.path, field=f"items[{i}]")
        yield item


def _node_times(summary: Mapping[str, Any]) -> list[int]:
    """Every sample time in a summary's node section (µs)."""
    node = summary.get("node") or {}
    times = [v.get("time") for v in node.values() if isinstance(v, dict)]
    times += [fs.get("time") for fs in (node.get("runtime") or {}).values() if isinstance(fs, dict)]
    parsed = []
    for t in times:
        if isinstance(t, str):
            with contextlib.suppress(ValueError):
                parsed.append(parse_time(t))
    return parsed


def summary_time(summary: Mapping[str, Any]) -> int | None:
    """The newest sample time in the node section: when the kubelet produced this summary."""
    return max(_node_times(summary), default=None)


Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: reading files, then writing ticks (the CLI draws it)."""


@dataclass
class _Plan:
    """Everything an import will write, checked before the disk is touched."""

    observations: list[tuple[str, Mapping[str, Any], int, str | None]]
    ticks: list[tuple[int, list[tuple[str, Document]]]]


def summary_earliest(summary: Mapping[str, Any]) -> int | None:
    """The oldest sample time in the node section: no pass of this summary is stamped earlier."""
    return min(_node_times(summary), default=None)


ALL_NODES = "*"
"""A ``--configz FILE`` with no ``NODE=``: in force on every node the summaries name."""


def _plan(docs: list[Document], node: str | None, configz_nodes: Mapping[str, str] | None = None) -> _Plan:
    """``configz_nodes``: a /configz file's path → the node ``--configz NODE=FILE`` gave it (or ALL_NODES)."""
    summaries = []
    for doc in docs:
        if doc.kind != "summary":
            continue
        at = doc.at if doc.at is not None else summary_time(doc.body)
        if at is None:
            raise RecordingError("summary has no sample time; give it as FILE@TIME", source=doc.path, field="node")
        name = (doc.body.get("node") or {}).get("nodeName") or node
        if not isinstance(name, str) or not name:
            raise RecordingError("summary has no node.nodeName; pass --node", source=doc.path, field="node.nodeName")
        try:
            project(doc.body)  # validate every summary before creating the recording
        except RecordingError as exc:
            raise exc.within(source=doc.path) from None
        summaries.append((at, name, doc))
    summaries.sort(key=lambda s: s[0])
    earliest = [min(at, summary_earliest(doc.body) or at) for at, _name, doc in summaries]
    first = min(earliest) if earliest else now_micros()
    names = sorted({s[1] for s in summaries})
    observations: list[tuple[str, Mapping[str, Any], int, str | None]] = []
    for doc in docs:
        if doc.kind in ("pods", "nodes", "events"):
            kind = doc.kind[:-1]
            for item in _items(doc):
                at = first
                if kind == "event":
                    stamp = item.get("lastTimestamp") or item.get("eventTime") or item.get("firstTimestamp")
                    if isinstance(stamp, str):
                        try:
                            at = parse_time(stamp)
                        except ValueError:
                            raise RecordingError(
                                f"expected an RFC 3339 time, got {stamp!r}", source=doc.path, field="lastTimestamp"
                            ) from None
                observations.append((kind, item, at, None))
        elif doc.kind == "configz" and (configz_nodes or {}).get(doc.path) == ALL_NODES and names:
            observations += [("configz", doc.body, first, name) for name in names]
        elif doc.kind == "configz":
            given = (configz_nodes or {}).get(doc.path)
            target = (given if given != ALL_NODES else None) or node or (names[0] if len(names) == 1 else None)
            if target is None:
                which = f"the summaries are of {len(names)} nodes" if names else "no summary names a node"
                raise RecordingError(
                    f"cannot tell which node this /configz belongs to ({which}); pass --node or --configz NODE=FILE",
                    source=doc.path,
                )
            observations.append(("configz", doc.body, first, target))
    by_time: dict[int, list[tuple[str, Document]]] = {}
    for at, name, doc in summaries:
        clash = next((d for n, d in by_time.get(at, []) if n == name), None)
        if clash is not None:
            raise RecordingError(
                f"node {name} has two summaries with the same sample time (also {clash.path}); "
                "give each its time as FILE@TIME",
                source=doc.path,
            )
        by_time.setdefault(at, []).append((name, doc))
    return _Plan(observations, sorted(by_time.items()))


@contextlib.contextmanager
def _leave_as_found(out: Path) -> Iterator[None]:
    """On any failure, remove what this import created and restore the manifest it changed.

    ``--append`` never folds before the end (see :func:`import_files`), so until the final
    fold the import's only traces are new journal segments (and, on a schema-v1 recording,
    new checksum lists): removing every path that was not there before undoes it.
    """
    existed = out.exists()
    before = set(out.rglob("*")) if out.is_dir() else set()
    manifest = out / MANIFEST
    old_manifest = manifest.read_bytes() if manifest.is_file() else None
    try:
        yield
    except RecordingBusyError:
        raise  # another writer holds the recording: nothing here is ours to undo
    except BaseException:
        if not existed:
            remove_tree(out)
        elif out.is_dir() and all(p.exists() or p.is_symlink() for p in before):
            for p in sorted(set(out.rglob("*")) - before, key=lambda p: len(p.parts), reverse=True):
                if p.is_dir() and not p.is_symlink():
                    remove_tree(p)
                else:
                    p.unlink(missing_ok=True)
            if old_manifest is not None and manifest.read_bytes() != old_manifest:
                write_atomic(manifest, old_manifest)
        raise


def import_files(
    specs: Iterable[str],
    out: Path,
    *,
    node: str | None = None,
    append: bool = False,
    progress: Progress | None = None,
    configz: Iterable[str] = (),
    events: Iterable[str] = (),
) -> dict[str, int]:
    """Import files into a new recording (or ``append`` to one); the disk is left as it was
    found when anything fails, and a recording with no tick (pods, nodes, events or /configz
    only) is refused: nothing could replay it."""
    report = progress or (lambda _phase, _done, _total: None)
    specs = list(specs)
    if not specs:
        raise RecordingError("give at least one file to import", source="import")
    docs = []
    for i, spec in enumerate(specs):
        docs.append(load_file(spec))
        report("reading", i + 1, len(specs))
    configz_nodes: dict[str, str] = {}
    for spec in configz:
        for_node, sep, path = spec.partition("=")
        if not sep or Path(spec).exists():
            for_node, path = "", spec
        docs.append(load_file(path, kind="configz"))
        configz_nodes[path] = for_node or ALL_NODES
    for path in events:
        doc = load_file(path)
        if doc.kind not in ("events", "empty"):
            raise RecordingError(f"expected {_EXPECTED['events']}, got a {doc.kind} document", source=path)
        docs.append(doc)
    plan = _plan(docs, node, configz_nodes)
    if not plan.ticks and not append:
        kinds = ", ".join(sorted({d.kind for d in docs}))
        raise RecordingError(
            f"no Summary API response among the files (only {kinds}): a recording needs at least one summary "
            "to replay; add one (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary), or --append these "
            "to a recording that has ticks; nothing was written"
        )
    files = [Path(d.path).name for d in docs]  # base names: packed recordings travel in bug reports
    with _leave_as_found(out):
        writer = RecordingWriter(out, Manifest(source="import", options={"files": files}), append=append)
        if append:  # keep everything in new journal segments until the end, so a failure can be undone
            writer.fold_every = writer.fold_rows = sys.maxsize
        for kind, item, at, target in plan.observations:
            writer.observe(kind, item, observed=at, node=target)
        for i, (at, group) in enumerate(plan.ticks):
            tick = writer.begin_tick(at)
            for name, doc in group:
                tick.add_summary(name, doc.body, scraped=at, source=doc.path)
            writer.commit(tick)
            report("writing", i + 1, len(plan.ticks))
        report("finishing", 0, 1)
        writer.finalize()
        report("finishing", 1, 1)
    return writer.manifest.counts
