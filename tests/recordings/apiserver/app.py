"""ASGI app playing the Kubernetes API server (and kubelets) for the recorder tests.

Real bearer-token auth (static tokens, plus expiring HMAC tokens minted by the exec plugin),
paged lists with resourceVersions, streaming watches fed by a change log (with 410 Gone
for versions older than the log), node proxy and direct-kubelet endpoints, and switchable
faults set through ``POST /_control/faults``.  Counters at ``GET /_control/stats``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import time
import urllib.parse
import uuid
from collections import Counter
from typing import Any

import orjson

from .cluster import SyntheticCluster
from .pressure import Pressure

Scope = dict[str, Any]

DEFAULT_FAULTS: dict[str, Any] = {
    "latency": 0.0,  # seconds added to every summary
    "timeout_nodes": [],  # summaries that hang
    "status_nodes": {},  # node -> HTTP status for its summary
    "proxy_429": 0,  # next N summaries answer 429 + Retry-After
    "api_503": 0,  # next N list/version requests answer 503 + Retry-After
    "retry_after": "1",
    "reset": 0,  # next N summaries are cut off mid-body
    "watch_410": 0,  # next N watches get an ERROR 410 event
    "watch_410_resource": "",  # ... only watches of this resource ("pods"), when set
    "forbidden": False,  # every request 403
    "forbidden_proxy": False,  # node proxy requests 403 (a role without nodes/proxy)
    "token_ttl": 3600.0,  # lifetime of exec-plugin tokens
    "evict_every": 0.0,  # seconds between pod evictions (0 = none)
    "mutate_every": 0.5,  # seconds between pod changes
    "latency_nodes": {},  # node -> seconds added to its summary (after the sample is read)
    "pods_latency": 0.0,  # seconds added to every kubelet /pods answer (a slow kubelet, --kubelet-direct)
    "list_phase": None,  # pod/event lists answer at this many seconds past a whole second (aligns ticks)
}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def mint_token(secret: str, issued: int) -> str:
    mac = hmac.new(secret.encode(), str(issued).encode(), hashlib.sha256).hexdigest()[:24]
    return f"exp.{issued}.{mac}"


class FakeApiServer:
    def __init__(
        self,
        cluster: SyntheticCluster,
        *,
        token: str,
        secret: str,
        kubelet_ports: dict[int, str],
        client_cert_ports: set[int] | None = None,
        sample_period: float = 1.0,
    ) -> None:
        self.cluster = cluster
        # Pressure mode: kubelets that sample every ``sample_period`` s and evict (pressure.py).
        self.pressure = Pressure(cluster, sample_period, self._publish_eviction) if cluster.pressure else None
        self.client_cert_ports = client_cert_ports or set()  # TLS there demands a client cert
        self.token = token
        self.secret = secret
        self.port_nodes = kubelet_ports
        self.faults = dict(DEFAULT_FAULTS)
        self.stats: Counter[str] = Counter()
        self.rv = 1000
        self.log: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, type, resource, object)
        self.waiters: set[asyncio.Event] = set()
        self.events: list[dict[str, Any]] = []
        self.evicted = 0

    # -- change log -----------------------------------------------------------------------
    def _emit(self, kind: str, resource: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.log.append((self.rv, kind, resource, orjson.loads(orjson.dumps(obj))))
        del self.log[:-500]
        for w in self.waiters:
            w.set()

    async def mutator(self) -> None:
        """Pods change (restart counts) and, when enabled, get evicted with an Event."""
        last_evict = time.monotonic()
        i = 0
        while True:
            await asyncio.sleep(max(0.05, float(self.faults["mutate_every"])))
            pods = self.cluster.pod_list()
            if not pods:
                continue
            pod = pods[i % len(pods)]
            i += 1
            for cs in pod["status"].get("containerStatuses", []):
                cs["restartCount"] = cs.get("restartCount", 0) + 1
            self._emit("MODIFIED", "pods", pod)
            every = float(self.faults["evict_every"])
            if every and time.monotonic() - last_evict >= every:
                last_evict = time.monotonic()
                self._evict(pods[(self.evicted * 7) % len(pods)])

    def _evict(self, pod: dict[str, Any]) -> None:
        msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. "
        self._publish_eviction(pod, msg, {}, {"phase": "Failed", "reason": "Evicted", "message": msg})

    def _publish_eviction(
        self, pod: dict[str, Any], msg: str, annotations: dict[str, str], status: dict[str, Any]
    ) -> None:
        """The pod turns Failed (``status`` merged in, conditions appended) and an Evicted Event
        with the message and annotations is emitted, as the kubelet's pod killer does."""
        self.evicted += 1
        conditions = status.pop("conditions", [])
        pod["status"].update(status)
        if conditions:
            pod["status"]["conditions"] = list(pod["status"].get("conditions") or []) + conditions
        self._emit("MODIFIED", "pods", pod)
        meta = pod["metadata"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta['name']}.{self.evicted}",
                "namespace": meta["namespace"],
                "uid": str(uuid.uuid4()),
                **({"annotations": annotations} if annotations else {}),
            },
            "involvedObject": {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
            "reason": "Evicted",
            "message": msg,
            "type": "Warning",
            "count": 1,
            "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
            "firstTimestamp": now,
            "lastTimestamp": now,
        }
        self.events.append(event)
        self._emit("ADDED", "events", event)

    # -- the kernel's kills (issue 17) ----------------------------------------------------------
    def _oom_kill(self, settings: dict[str, Any]) -> dict[str, Any]:
        """A container of the node's pod ``pod`` (index) OOM-killed and restarted, as the kubelet reports it:
        ``lastState.terminated`` reason ``OOMKilled``, exit code 137, ``restartCount`` + 1, running again."""
        pod = self.cluster.pod_list(settings["node"])[int(settings.get("pod", 0))]
        containers = pod["spec"]["containers"]
        name = settings.get("container") or containers[0]["name"]
        statuses = pod["status"].setdefault("containerStatuses", [])
        cs = next((c for c in statuses if c.get("name") == name), None)
        if cs is None:
            cs = {"name": name, "ready": True, "restartCount": 0, "state": {"running": {"startedAt": _now()}}}
            statuses.append(cs)
        finished = _now()
        started = (cs.get("state") or {}).get("running", {}).get("startedAt") or finished
        cs["lastState"] = {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": started,
                "finishedAt": finished,
                "containerID": "containerd://oom",
            }
        }
        cs["restartCount"] = cs.get("restartCount", 0) + 1
        cs["state"] = {"running": {"startedAt": finished}}
        self._emit("MODIFIED", "pods", pod)
        meta = pod["metadata"]
        return {
            "namespace": meta["namespace"],
            "pod": meta["name"],
            "uid": meta["uid"],
            "container": name,
            "finishedAt": finished,
            "restartCount": cs["restartCount"],
        }

    def _system_oom(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The kubelet's OOM watcher Event on the Node (pkg/kubelet/oom/oom_watcher_linux.go); sent again with the
        same name, its count grows as the kubelet's event recorder aggregates repeats."""
        node = settings["node"]
        message = f"System OOM encountered, victim process: {settings['victim']}, pid: {settings['pid']}"
        name = settings.get("name") or f"{node}.systemoom.{len(self.events)}"
        now = _now()
        event = next((e for e in self.events if e["metadata"]["name"] == name), None)
        if event is None:
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4())},
                "involvedObject": {"kind": "Node", "name": node, "uid": node},
                "reason": "SystemOOM",
                "type": "Warning",
                "count": 0,
                "source": {"component": "kubelet", "host": node},
                "firstTimestamp": now,
            }
            self.events.append(event)
        event.update(message=message, count=event["count"] + 1, lastTimestamp=now)
        self._emit("ADDED" if event["count"] == 1 else "MODIFIED", "events", event)
        return {
            "name": name,
            "uid": event["metadata"]["uid"],
            "count": event["count"],
            "message": message,
            "lastTimestamp": now,
        }

    # -- ASGI -----------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                if not hasattr(self, "_task"):  # hypercorn runs the lifespan once per listener
                    self._task = asyncio.get_running_loop().create_task(self.mutator())
                    if self.pressure is not None:
                        self._pressure_task = asyncio.get_running_loop().create_task(self.pressure.run())
                await send({"type": "lifespan.startup.complete"})
                msg = await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        query = dict(urllib.parse.parse_qsl(scope.get("query_string", b"").decode()))
        if path.startswith("/_control/"):
            await self._control(path, receive, send)
            return
        self.stats["requests"] += 1
        self.stats[f"http_{scope.get('http_version', '?')}"] += 1
        status = self._auth(scope, port=scope["server"][1] if scope.get("server") else None)
        if status:
            self.stats[f"auth_{status}"] += 1
            await _json(send, status, {"kind": "Status", "code": status, "reason": "Unauthorized"})
            return
        port = scope["server"][1] if scope.get("server") else None
        if self.faults["forbidden_proxy"] and "/proxy/" in path:
            self.stats["auth_403"] += 1
            await _json(send, 403, {"kind": "Status", "code": 403, "reason": "Forbidden"})
            return
        if port in self.port_nodes:
            await self._kubelet(self.port_nodes[port], path.lstrip("/"), send)
            return
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) >= 5 and parts[4] == "proxy":
            self.stats["proxy_requests"] += 1  # what a per-node recorder (--node) must never send
            await self._kubelet(parts[3], "/".join(parts[5:]), send)
            return
        if self._take("api_503"):
            self.stats["api_503"] += 1
            await _json(send, 503, {"kind": "Status", "code": 503}, {"retry-after": str(self.faults["retry_after"])})
            return
        if path == "/version":
            await _json(send, 200, {"major": "1", "minor": "28", "gitVersion": "v1.28.3-fake"})
        elif parts[:2] == ["api", "v1"] and len(parts) == 3 and parts[2] in ("nodes", "pods", "events"):
            if query.get("watch") in ("1", "true"):
                await self._watch(parts[2], query, send)
            else:
                await self._list(parts[2], query, send)
        else:
            await _json(send, 404, {"kind": "Status", "code": 404})

    def _take(self, fault: str) -> bool:
        if self.faults.get(fault, 0) > 0:
            self.faults[fault] -= 1
            return True
        return False

    def _auth(self, scope: Scope, port: int | None) -> int:
        if self.faults["forbidden"]:
            return 403
        headers = dict(scope["headers"])
        value = headers.get(b"authorization", b"").decode()
        if port in self.client_cert_ports:
            # The TLS handshake already verified the client certificate (CERT_REQUIRED).
            self.stats["client_cert_requests" if not value else "client_cert_requests_with_token"] += 1
            return 0
        if not value.startswith("Bearer "):
            return 401
        token = value[7:]
        if hmac.compare_digest(token, self.token):
            return 0
        if token.startswith("exp."):
            _, issued, _mac = token.split(".", 2)
            if hmac.compare_digest(token, mint_token(self.secret, int(issued))):
                if time.time() - int(issued) / 1000 < float(self.faults["token_ttl"]):  # issued in ms
                    return 0
                self.stats["expired_tokens"] += 1
        return 401

    async def _control(self, path: str, receive: Any, send: Any) -> None:
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if path == "/_control/faults" and body:
            self.faults.update(orjson.loads(body))
        elif path == "/_control/kubelet_restart" and body:
            node = orjson.loads(body)["node"]
            self.cluster.kubelet_restarts[node] = self.cluster.kubelet_restarts.get(node, 0) + 60
        elif path == "/_control/token" and body:  # rotate the static token (service-account rotation)
            self.token = orjson.loads(body)["token"]
        elif path == "/_control/evict" and body:
            self._evict(self.cluster.pod_list(orjson.loads(body)["node"])[0])
        elif path == "/_control/oom_kill" and body:
            await _json(send, 200, self._oom_kill(orjson.loads(body)))
            return
        elif path == "/_control/system_oom" and body:
            await _json(send, 200, self._system_oom(orjson.loads(body)))
            return
        elif path == "/_control/node_ready" and body:
            settings = orjson.loads(body)
            self.cluster.ready[settings["node"]] = (settings["status"], settings.get("reason", ""), time.time())
            self._emit("MODIFIED", "nodes", self.cluster.node_object(settings["node"], self.rv))
        elif path == "/_control/pressure":
            if self.pressure is None:
                await _json(send, 409, {"error": "start the server with --pressure"})
                return
            settings = orjson.loads(body) if body else {}
            out = self.pressure.arm(settings["nodes"]) if settings.get("nodes") else {}
            await _json(send, 200, {**self.pressure.state(), **out})
            return
        await _json(send, 200, {"faults": self.faults, "stats": dict(self.stats), "rv": self.rv})

    async def _kubelet(self, node: str, endpoint: str, send: Any) -> None:
        if node not in self.cluster.summaries:
            await _json(send, 404, {"kind": "Status", "code": 404, "message": f"nodes {node} not found"})
            return
        self.stats[f"kubelet_{endpoint}"] += 1
        if endpoint == "configz":
            self.stats[f"configz_{node}"] += 1
            await _json(send, 200, self.cluster.configz_body)
            return
        if endpoint == "pods":
            if self.faults["pods_latency"]:
                await asyncio.sleep(float(self.faults["pods_latency"]))
            self.stats["pod_lists"] += 1
            await _json(
                send, 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": self.cluster.pod_list(node)}
            )
            return
        if endpoint != "stats/summary":
            await _json(send, 404, {"kind": "Status", "code": 404})
            return
        # A pressure-mode kubelet answers with its cached sample, read when the request arrives;
        # latency then delays the answer (a slow proxy), so it can land after an eviction.
        sampled = self.pressure.summary(node, time.time()) if self.pressure is not None else None
        if self.faults["latency"]:
            await asyncio.sleep(float(self.faults["latency"]))
        if self.faults["latency_nodes"].get(node):
            await asyncio.sleep(float(self.faults["latency_nodes"][node]))
        if node in self.faults["timeout_nodes"]:
            await asyncio.sleep(30)
        code = self.faults["status_nodes"].get(node)
        if code:
            await _json(send, int(code), {"kind": "Status", "code": int(code)})
            return
        if self._take("proxy_429"):
            self.stats["proxy_429"] += 1
            await _json(send, 429, {"kind": "Status", "code": 429}, {"retry-after": str(self.faults["retry_after"])})
            return
        body = sampled if sampled is not None else self.cluster.summary(node, time.time())
        if self._take("reset"):
            self.stats["resets"] += 1
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body[: len(body) // 3], "more_body": True})
            raise ConnectionResetError("fault: connection reset")
        self.stats["summaries"] += 1
        await _raw(send, 200, body)

    def _objects(self, resource: str) -> list[dict[str, Any]]:
        if resource == "nodes":
            return [self.cluster.node_object(n, self.rv) for n in self.cluster.names]
        if resource == "pods":
            return self.cluster.pod_list()
        return list(self.events)

    async def _list(self, resource: str, query: dict[str, str], send: Any) -> None:
        self.stats[f"list_{resource}"] += 1
        if not query.get("continue"):
            self.stats[f"list_{resource}_started"] += 1  # first pages: more than one means a restarted list
            phase = self.faults["list_phase"]
            if phase is not None and resource in ("pods", "events"):
                # The recorder starts ticking once these lists are in: its polls then come at
                # about ``phase`` s past each whole second, whatever its start-up took.
                now = time.time()
                await asyncio.sleep((float(phase) - now % 1.0) % 1.0)
        items = self._objects(resource)
        if resource == "nodes" and "labelSelector" in query:
            key, _, value = query["labelSelector"].partition("=")
            items = [i for i in items if i["metadata"]["labels"].get(key) == value]
        if resource == "nodes" and query.get("fieldSelector", "").startswith("metadata.name="):
            self.stats["list_nodes_by_name"] += 1
            items = [i for i in items if i["metadata"]["name"] == query["fieldSelector"].split("=", 1)[1]]
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": str(self.rv)}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        await _json(send, 200, {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page})

    async def _watch(self, resource: str, query: dict[str, str], send: Any) -> None:
        self.stats[f"watch_{resource}"] += 1
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        only = self.faults.get("watch_410_resource")
        if (not only or only == resource) and self._take("watch_410"):
            self.stats["watch_410"] += 1
            gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
            await send({"type": "http.response.body", "body": orjson.dumps(gone) + b"\n", "more_body": False})
            return
        rv = int(query.get("resourceVersion") or self.rv)
        if self.log and rv < self.log[0][0] - 1:
            gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
            await send({"type": "http.response.body", "body": orjson.dumps(gone) + b"\n", "more_body": False})
            return
        deadline = time.monotonic() + min(float(query.get("timeoutSeconds") or 60), 60)
        wake = asyncio.Event()
        self.waiters.add(wake)
        try:
            while time.monotonic() < deadline:
                chunk = b""
                field = query.get("fieldSelector", "")
                only_name = field.split("=", 1)[1] if field.startswith("metadata.name=") else None
                for erv, kind, res, obj in self.log:
                    if erv > rv and res == resource and only_name in (None, obj["metadata"].get("name")):
                        chunk += orjson.dumps({"type": kind, "object": obj}) + b"\n"
                if self.log:
                    rv = max(rv, self.log[-1][0])
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=max(0.01, deadline - time.monotonic()))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.waiters.discard(wake)


async def _raw(send: Any, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    hdrs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Any, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    await _raw(send, status, orjson.dumps(obj), headers)
