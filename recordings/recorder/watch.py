"""List + watch of pods, nodes and events, as client-go's reflector does it.

List (paged) to get a resourceVersion, then watch from it; a watch that ends is resumed from
the last seen resourceVersion (bookmarks keep it fresh); ``410 Gone`` — as an HTTP status or
an ERROR event — means the version is too old, so re-list and reconcile deletions.  Network
errors back off exponentially; 401/403 propagate and stop the recorder.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .client import KubeClient, RequestFailed

OnObject = Callable[[str, dict[str, Any], bool], None]


@dataclass
class WatchStats:
    relists: int = 0
    reconnects: int = 0
    events: int = 0


@dataclass
class ListWatcher:
    """Keeps one collection (``/api/v1/pods`` …) mirrored into ``on_object(kind, obj, deleted)``."""

    client: KubeClient
    path: str
    kind: str
    on_object: OnObject
    selector: dict[str, str] = field(default_factory=dict)
    timeout_seconds: int = 290
    stats: WatchStats = field(default_factory=WatchStats)
    synced: asyncio.Event = field(default_factory=asyncio.Event)  # set once a full list went through
    _known: dict[str, dict[str, Any]] = field(default_factory=dict)
    _rv: str | None = None

    def _url(self, **params: str) -> str:
        query = urllib.parse.urlencode({**self.selector, **params})
        return f"{self.path}?{query}"

    @staticmethod
    def _stub(obj: dict[str, Any]) -> dict[str, Any]:
        """What a later deletion needs: identity and node — not the whole object (memory)."""
        meta = obj.get("metadata") or {}
        keep = ("name", "namespace", "uid", "resourceVersion")
        return {
            "metadata": {k: meta[k] for k in keep if k in meta},
            "spec": {"nodeName": (obj.get("spec") or {}).get("nodeName")},
        }

    @staticmethod
    def _key(obj: dict[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")

    async def list_once(self) -> None:
        """Full (paged) list; objects that vanished since the last list are reported deleted.

        Each page is handed on and dropped at once, keeping only stubs: with 25 000 pods the
        whole list as Python objects would cost gigabytes.
        """
        seen: dict[str, dict[str, Any]] = {}
        cont = ""
        while True:
            params = {"limit": "500"} | ({"continue": cont} if cont else {})
            body = await self.client.get_json(self._url(**params))
            for item in body.get("items") or []:
                self.on_object(self.kind, item, False)
                seen[self._key(item)] = self._stub(item)
            meta = body.get("metadata") or {}
            cont = meta.get("continue") or ""
            del body
            if not cont:
                self._rv = meta.get("resourceVersion")
                break
        for key, old in self._known.items():
            if key not in seen:
                self.on_object(self.kind, old, True)
        self._known = seen
        self.stats.relists += 1
        self.synced.set()

    async def _watch_once(self) -> bool:
        """One watch request; returns False when the stored resourceVersion is gone (re-list)."""
        params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(self.timeout_seconds)}
        if self._rv:
            params["resourceVersion"] = self._rv
        async with self.client.stream_lines(self._url(**params)) as lines:
            async for line in lines:
                if not line.strip():
                    continue
                event = orjson.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    return obj.get("code") != 410
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self._rv = rv
                if kind == "BOOKMARK":
                    continue
                deleted = kind == "DELETED"
                key = self._key(obj)
                if deleted:
                    self._known.pop(key, None)
                else:
                    self._known[key] = self._stub(obj)
                self.stats.events += 1
                self.on_object(self.kind, obj, deleted)
        return True

    async def run(self, *, need_list: bool = True) -> None:
        """Forever: list, then watch and resume; only AuthFailure escapes."""
        delay = 0.2
        while True:
            try:
                if need_list:
                    await self.list_once()
                    need_list = False
                need_list = not await self._watch_once()
                delay = 0.2
            except RequestFailed as exc:
                if exc.status == 410:
                    need_list = True
                    continue
                self.stats.reconnects += 1
                wait = exc.retry_after if exc.retry_after is not None else delay
                delay = min(delay * 2, 10.0)
                await asyncio.sleep(wait)
            except orjson.JSONDecodeError:
                self.stats.reconnects += 1
                await asyncio.sleep(delay)
