"""Run the fake API server: ``python -m apiserver.server --dir D --nodes N --pods P``.

Writes throwaway TLS certificates (trustme), a kubeconfig with contexts ``static`` (bearer
token), ``exec`` (exec plugin with expiring tokens) and ``bad`` (wrong token), then
``ready.json`` with the ports once listening on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import socket
import sys
from pathlib import Path

import orjson
import trustme
import yaml
from hypercorn.asyncio import serve
from hypercorn.config import Config

from .app import FakeApiServer
from .cluster import SyntheticCluster


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


def write_files(d: Path, port: int, token: str, secret: str) -> dict[str, str]:
    if not (d / "server.pem").exists():  # a restarted server keeps its certificate, as a real one does
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        ca.cert_pem.write_to_path(str(d / "ca.pem"))
        cert.private_key_and_cert_chain_pem.write_to_path(str(d / "server.pem"))
    server = f"https://127.0.0.1:{port}"
    plugin_env = [
        {"name": "EVL_TOKEN_SECRET", "value": secret},
        {"name": "EVL_PLUGIN_LOG", "value": str(d / "plugin.log")},
        {"name": "PYTHONPATH", "value": str(Path(__file__).resolve().parents[1])},
    ]
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "static",
        "clusters": [{"name": "fake", "cluster": {"server": server, "certificate-authority": str(d / "ca.pem")}}],
        "users": [
            {"name": "static", "user": {"token": token}},
            {"name": "bad", "user": {"token": "not-a-valid-token"}},
            {
                "name": "exec",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": sys.executable,
                        "args": ["-m", "apiserver.exec_plugin"],
                        "env": plugin_env,
                    }
                },
            },
        ],
        "contexts": [{"name": n, "context": {"cluster": "fake", "user": n}} for n in ("static", "bad", "exec")],
    }
    path = d / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    os.chmod(path, 0o600)
    return {"kubeconfig": str(path), "ca": str(d / "ca.pem")}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--pods", type=int, default=5)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--kubelet-ports", action="store_true", help="one extra listening port per node")
    p.add_argument("--secret", default=None)
    args = p.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    api_sock = _listen(args.port)
    port = api_sock.getsockname()[1]
    kubelet_socks = {n: _listen(0) for n in (f"node-{i:03d}" for i in range(args.nodes))} if args.kubelet_ports else {}
    kports = {n: s.getsockname()[1] for n, s in kubelet_socks.items()}
    cluster = SyntheticCluster(args.nodes, args.pods, kubelet_ports=kports)
    state_file = d / "secrets.json"
    if state_file.exists():
        state = orjson.loads(state_file.read_bytes())
    else:
        state = {"token": secrets.token_hex(16), "secret": secrets.token_hex(16)}
        state_file.write_bytes(orjson.dumps(state))
    files = write_files(d, port, state["token"], state["secret"])
    app = FakeApiServer(
        cluster, token=state["token"], secret=state["secret"], kubelet_ports={v: k for k, v in kports.items()}
    )
    config = Config()
    config.bind = [f"fd://{api_sock.fileno()}"] + [f"fd://{s.fileno()}" for s in kubelet_socks.values()]
    config.certfile = str(d / "server.pem")
    config.keyfile = str(d / "server.pem")
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.errorlog = str(d / "server-errors.log")
    config.graceful_timeout = 0.1
    config.keep_alive_timeout = 75
    config.h2_max_concurrent_streams = 1000
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    ready = {"port": port, "kubelet_ports": kports, "token": state["token"], **files}
    tmp = d / "ready.json.tmp"
    tmp.write_bytes(orjson.dumps(ready))
    tmp.replace(d / "ready.json")
    await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]


if __name__ == "__main__":
    asyncio.run(main())
