"""``evictlens import``: files a user already has → a recording.

Accepts, in any mix and order: ``kubectl get --raw /api/v1/nodes/N/proxy/stats/summary``
outputs (one tick each, at the newest sample time inside unless ``FILE@TIME`` says
otherwise), ``kubectl get pods|nodes|events -o json`` (or YAML), kubelet ``/pods`` PodLists
and a ``/configz`` response.  The kind of each file is recognised from its content.  Pods,
nodes and configz are stored as observed at the first tick, so they are in force for all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from .errors import RecordingError
from .format import Manifest
from .summary_codec import parse_time, project
from .writer import RecordingWriter, now_micros


@dataclass(frozen=True)
class Document:
    path: str
    kind: str
    body: Any
    at: int | None


def load_file(spec: str) -> Document:
    """Read ``FILE`` or ``FILE@TIME`` (RFC 3339) and recognise what it holds."""
    path, at = spec, None
    if "@" in spec and not Path(spec).exists():
        path, _, when = spec.rpartition("@")
        try:
            at = parse_time(when)
        except ValueError:
            raise RecordingError(f"expected FILE@TIME with an RFC 3339 time, got {when!r}", source=spec) from None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise RecordingError(f"cannot read file ({exc.strerror})", source=path) from None
    body = _parse(data, path)
    return Document(path, _kind(body, path), body, at)


def _parse(data: bytes, path: str) -> Any:
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise RecordingError(f"not valid JSON: {exc}", source=path) from None
    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        raise RecordingError(
            f"not valid JSON or YAML ({getattr(exc, 'problem', exc)})", source=path, field=where
        ) from None


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
            kinds = {i.get("kind") for i in body["items"] if isinstance(i, dict)}
            if len(kinds) == 1 and (only := kinds.pop()) in _ITEM_KINDS:
                return _ITEM_KINDS[only]
            if not body["items"]:
                return "empty"
    raise RecordingError(
        "not a Summary API response, /configz response, or a Pod, Node or Event (list); "
        "expected JSON or YAML as printed by kubectl or the kubelet",
        source=path,
    )


def _items(doc: Document) -> Iterator[Mapping[str, Any]]:
    body = doc.body
    items = body.get("items") if isinstance(body.get("items"), list) else [body]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordingError("expected a JSON object", source=doc.path, field=f"items[{i}]")
        yield item


def summary_time(summary: Mapping[str, Any]) -> int | None:
    """The newest sample time in the node section: when the kubelet produced this summary."""
    node = summary.get("node") or {}
    times = [v.get("time") for v in node.values() if isinstance(v, dict)]
    times += [fs.get("time") for fs in (node.get("runtime") or {}).values() if isinstance(fs, dict)]
    parsed = []
    for t in times:
        if isinstance(t, str):
            with contextlib.suppress(ValueError):
                parsed.append(parse_time(t))
    return max(parsed) if parsed else None


def import_files(specs: Iterable[str], out: Path, *, node: str | None = None, append: bool = False) -> dict[str, int]:
    docs = [load_file(s) for s in specs]
    if not docs:
        raise RecordingError("give at least one file to import", source="import")
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
    first = summaries[0][0] if summaries else now_micros()
    names = sorted({s[1] for s in summaries})
    writer = RecordingWriter(out, Manifest(source="import", options={"files": [d.path for d in docs]}), append=append)
    for doc in docs:
        if doc.kind in ("pods", "nodes", "events"):
            kind = doc.kind[:-1]
            for item in _items(doc):
                at = first
                if kind == "event":
                    stamp = item.get("lastTimestamp") or item.get("eventTime") or item.get("firstTimestamp")
                    at = parse_time(stamp) if isinstance(stamp, str) else first
                writer.observe(kind, item, observed=at)
        elif doc.kind == "configz":
            target = node or (names[0] if len(names) == 1 else None)
            if target is None:
                raise RecordingError("cannot tell which node this /configz belongs to; pass --node", source=doc.path)
            writer.observe("configz", doc.body, observed=first, node=target)
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
    for at, group in sorted(by_time.items()):
        tick = writer.begin_tick(at)
        for name, doc in group:
            tick.add_summary(name, doc.body, scraped=at, source=doc.path)
        writer.commit(tick)
    writer.finalize()
    return writer.manifest.counts
