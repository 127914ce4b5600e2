"""Concurrent, bounded polling of per-node kubelet endpoints.

Either through the API server proxy (``/api/v1/nodes/N/proxy/stats/summary``) or straight to
the kubelet (``https://ADDRESS:10250/stats/summary``).  A node that fails — 404, 5xx,
timeout, reset — yields a result with an error and no body: that node's tick is a gap and
the others are unaffected.  Only 401/403 (AuthFailure) escapes, because it will not heal.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .client import KubeClient, RequestFailed

DEFAULT_KUBELET_PORT = 10250


@dataclass
class NodeTarget:
    name: str
    address: str | None = None
    port: int = DEFAULT_KUBELET_PORT
    kubelet_start: str | None = None

    @classmethod
    def from_node(cls, node: dict[str, Any], port_override: int | None) -> NodeTarget:
        status = node.get("status") or {}
        addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, dict)}
        address = addresses.get("InternalIP") or addresses.get("ExternalIP") or addresses.get("Hostname")
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        return cls(node["metadata"]["name"], address, port_override or port or DEFAULT_KUBELET_PORT)

    def url(self, endpoint: str, direct: bool) -> str:
        if direct:
            host = f"[{self.address}]" if self.address and ":" in self.address else self.address
            return f"https://{host}:{self.port}/{endpoint}"
        return f"/api/v1/nodes/{urllib.parse.quote(self.name, safe='')}/proxy/{endpoint}"


@dataclass
class PollResult:
    node: str
    body: bytes | None
    error: str | None
    scraped: int


async def poll_nodes(
    client: KubeClient, targets: Iterable[NodeTarget], endpoint: str, *, concurrency: int, deadline: float
) -> list[PollResult]:
    """GET ``endpoint`` from every node, at most ``concurrency`` at a time."""
    gate = asyncio.Semaphore(concurrency)
    return list(await asyncio.gather(*(poll_one(client, t, endpoint, gate=gate, deadline=deadline) for t in targets)))


async def poll_one(
    client: KubeClient, target: NodeTarget, endpoint: str, *, gate: asyncio.Semaphore, deadline: float
) -> PollResult:
    """GET ``endpoint`` from one node, holding ``gate`` while the request runs."""
    async with gate:
        if client.direct and not target.address:
            return PollResult(target.name, None, "node has no address in its status", _now())
        try:
            body = await client.get(target.url(endpoint, client.direct), kubelet=client.direct, deadline=deadline)
        except RequestFailed as exc:  # a refused client certificate says which one (a kubelet's own client CA)
            return PollResult(target.name, None, exc.refused_certificate or str(exc), _now())
        return PollResult(target.name, body, None, _now())


def _now() -> int:
    return time.time_ns() // 1000
