"""Run the fake API server: ``python -m apiserver.server --dir D --nodes N --pods P``.

Writes throwaway TLS certificates (trustme), a kubeconfig with contexts ``static`` (bearer
token), ``exec`` (exec plugin with expiring tokens) and ``bad`` (wrong token), then
``ready.json`` with the ports once listening on 127.0.0.1.

With ``--client-certs`` it also listens on a mutual-TLS port (``mtls_port``) that requires a
client certificate from its own client CA, as a kube-apiserver with ``--client-ca-file``
does, and adds contexts ``cert`` (``client-certificate-data``/``client-key-data``),
``cert-files`` (``client-certificate``/``client-key``, paths relative to the kubeconfig)
and ``cert-untrusted`` (a certificate from another CA).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import secrets
import signal
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

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


def write_client_certs(d: Path) -> None:
    """A client CA the mTLS port trusts, one client certificate from it and one from elsewhere."""
    if (d / "client-ca.pem").exists():
        return
    client_ca = trustme.CA()
    client_ca.cert_pem.write_to_path(str(d / "client-ca.pem"))
    cert = client_ca.issue_cert("evictlens-recorder", common_name="evictlens-recorder")
    cert.cert_chain_pems[0].write_to_path(str(d / "client.pem"))
    cert.private_key_pem.write_to_path(str(d / "client-key.pem"))
    stranger = trustme.CA().issue_cert("evictlens-recorder")
    stranger.cert_chain_pems[0].write_to_path(str(d / "untrusted-client.pem"))
    stranger.private_key_pem.write_to_path(str(d / "untrusted-client-key.pem"))
    for name in ("client-key.pem", "untrusted-client-key.pem"):
        os.chmod(d / name, 0o600)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_files(d: Path, port: int, token: str, secret: str, mtls_port: int | None = None) -> dict[str, str]:
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
    kc: dict[str, Any] = {
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
    if mtls_port is not None:
        write_client_certs(d)
        mtls = {"server": f"https://127.0.0.1:{mtls_port}", "certificate-authority": str(d / "ca.pem")}
        kc["clusters"].append({"name": "fake-mtls", "cluster": mtls})
        kc["users"] += [
            {
                "name": "cert",
                "user": {
                    "client-certificate-data": _b64(d / "client.pem"),
                    "client-key-data": _b64(d / "client-key.pem"),
                },
            },
            {"name": "cert-files", "user": {"client-certificate": "client.pem", "client-key": "client-key.pem"}},
            {
                "name": "cert-untrusted",
                "user": {"client-certificate": "untrusted-client.pem", "client-key": "untrusted-client-key.pem"},
            },
        ]
        kc["contexts"] += [
            {"name": n, "context": {"cluster": "fake-mtls", "user": n}}
            for n in ("cert", "cert-files", "cert-untrusted")
        ]
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
    p.add_argument("--max-streams", type=int, default=100, help="HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS")
    p.add_argument("--max-requests", type=int, default=0, help="requests per connection before GOAWAY (0: no cap)")
    p.add_argument("--client-certs", action="store_true", help="also listen on a port that requires client certs")
    p.add_argument(
        "--pressure",
        action="store_true",
        help="kubelets at 1.30 under memory pressure, evicting with the port (see apiserver/pressure.py)",
    )
    p.add_argument("--sample-period", type=float, default=1.0, help="pressure mode: seconds between stats samples")
    args = p.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    api_sock = _listen(args.port)
    port = api_sock.getsockname()[1]
    kubelet_socks = {n: _listen(0) for n in (f"node-{i:03d}" for i in range(args.nodes))} if args.kubelet_ports else {}
    kports = {n: s.getsockname()[1] for n, s in kubelet_socks.items()}
    mtls_sock = _listen(0) if args.client_certs else None
    mtls_port = mtls_sock.getsockname()[1] if mtls_sock is not None else None
    cluster = SyntheticCluster(args.nodes, args.pods, kubelet_ports=kports, pressure=args.pressure)
    state_file = d / "secrets.json"
    if state_file.exists():
        state = orjson.loads(state_file.read_bytes())
    else:
        state = {"token": secrets.token_hex(16), "secret": secrets.token_hex(16)}
        state_file.write_bytes(orjson.dumps(state))
    files = write_files(d, port, state["token"], state["secret"], mtls_port)
    app = FakeApiServer(
        cluster,
        token=state["token"],
        secret=state["secret"],
        kubelet_ports={v: k for k, v in kports.items()},
        client_cert_ports={mtls_port} if mtls_port is not None else set(),
        sample_period=args.sample_period,
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
    # Behave like kube-apiserver (Go net/http2): 100 concurrent streams per connection and no
    # cap on requests per connection.  Hypercorn's default cap (1000) ends an HTTP/2
    # connection with a GOAWAY and then drops it at the client's next frame, killing every
    # stream in flight — after two ticks at 500 nodes.
    config.h2_max_concurrent_streams = args.max_streams
    config.keep_alive_max_requests = args.max_requests or sys.maxsize
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    servers = [serve(app, config, shutdown_trigger=stop.wait)]  # type: ignore[arg-type]
    if mtls_sock is not None:
        # hypercorn has one TLS context per Config, so mutual TLS gets its own listener.
        mconfig = Config()
        for key in ("certfile", "keyfile", "alpn_protocols", "accesslog", "errorlog", "graceful_timeout"):
            setattr(mconfig, key, getattr(config, key))
        for key in ("keep_alive_timeout", "h2_max_concurrent_streams", "keep_alive_max_requests"):
            setattr(mconfig, key, getattr(config, key))
        mconfig.bind = [f"fd://{mtls_sock.fileno()}"]
        mconfig.ca_certs = str(d / "client-ca.pem")
        mconfig.verify_mode = ssl.CERT_REQUIRED
        servers.append(serve(app, mconfig, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    ready = {"port": port, "mtls_port": mtls_port, "kubelet_ports": kports, "token": state["token"], **files}
    tmp = d / "ready.json.tmp"
    tmp.write_bytes(orjson.dumps(ready))
    tmp.replace(d / "ready.json")
    await asyncio.gather(*servers)


if __name__ == "__main__":
    asyncio.run(main())
