"""``evictlens record`` flags, parsed once into a typed :class:`RecordOptions`."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kube.duration import parse_duration_seconds
from kube.errors import RecordingError


@dataclass(frozen=True)
class RecordOptions:
    output: str
    kubeconfig: str | None
    context: str | None
    nodes: str | None
    interval: float
    duration: float | None
    kubelet_direct: bool
    keep_raw: bool
    append: bool
    concurrency: int
    timeout: float
    kubelet_port: int | None
    kubelet_ca: str | None
    status: str
    watch: bool
    http1: bool = False
    retain: float | None = None  # --retain: seconds of the rolling window (None: keep everything)
    listen: str | None = None  # --listen ADDR: /healthz, /readyz, /metrics (health.py)
    node: str | None = None  # --node NAME: this node only, through its own kubelet (a DaemonSet pod's)

    def manifest_options(self) -> dict[str, Any]:
        """What goes into the manifest: how the data was taken, never credentials or paths."""
        out = asdict(self)
        for key in ("output", "kubeconfig", "kubelet_ca", "status", "listen"):
            out.pop(key)
        return out


def add_record_arguments(p: argparse.ArgumentParser) -> None:
    """Every flag with a help text and an example; durations use Go's grammar (10s, 1m30s, 24h)."""
    p.add_argument("-o", "--output", metavar="DIR", help="recording directory to create, e.g. -o rec")
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file, as with kubectl (default: $KUBECONFIG, a colon-separated list merged as kubectl "
        "merges it, else ~/.kube/config, else the in-cluster service account), e.g. --kubeconfig ~/.kube/prod",
    )
    p.add_argument(
        "--context",
        metavar="NAME",
        help="kubeconfig context to use (default: current-context), e.g. --context kind-kind",
    )
    p.add_argument(
        "--nodes", metavar="SELECTOR", help="label selector choosing the nodes to record, e.g. --nodes pool=batch"
    )
    p.add_argument(
        "--interval",
        default="10s",
        metavar="DURATION",
        help="time between ticks, a Go duration (default 10s), e.g. --interval 2s",
    )
    p.add_argument(
        "--duration",
        metavar="DURATION",
        help="stop after this long, a Go duration (default: until Ctrl-C), e.g. --duration 24h",
    )
    p.add_argument(
        "--kubelet-direct",
        action="store_true",
        help="talk to each kubelet's port 10250 instead of the API server proxy (needs nodes/stats, nodes/pods, "
        "nodes/configz; see --print-rbac), e.g. --kubelet-direct --kubelet-ca kubelet-ca.pem",
    )
    p.add_argument(
        "--kubelet-port",
        type=int,
        metavar="PORT",
        help="override the kubelet port from the node object, e.g. --kubelet-port 10250",
    )
    p.add_argument(
        "--kubelet-ca",
        metavar="FILE",
        help="CA bundle for kubelet serving certificates (default: cluster CA), e.g. --kubelet-ca kubelet-ca.pem",
    )
    p.add_argument(
        "--keep-raw",
        action="store_true",
        help="also keep the raw Summary API responses (larger recording), e.g. --keep-raw",
    )
    p.add_argument(
        "--retain",
        metavar="DURATION",
        help="keep only the last DURATION (a Go duration, at least two intervals): older parts are dropped as "
        "the recorder goes, a full disk drops the oldest first, and a restart with the same arguments resumes "
        "the recording (FORMAT.md §3.3), e.g. --retain 6h",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="continue an existing recording DIR instead of creating it, e.g. -o rec --append",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=32,
        metavar="N",
        help="parallel summary requests (default 32), e.g. --concurrency 64",
    )
    p.add_argument(
        "--timeout",
        default="5s",
        metavar="DURATION",
        help="per-request timeout, a Go duration (default 5s), e.g. --timeout 2s",
    )
    p.add_argument(
        "--http1",
        action="store_true",
        help="use HTTP/1.1 even where HTTP/2 is offered (many connections instead of one), e.g. --http1",
    )
    p.add_argument(
        "--no-watch",
        dest="watch",
        action="store_false",
        help="do not list/watch pods, nodes and events (summaries only), e.g. --no-watch",
    )
    p.add_argument(
        "--status",
        choices=("auto", "live", "plain", "none"),
        default="auto",
        help="status display on stderr (default auto: a live line on a TTY, plain lines otherwise), "
        "e.g. --status plain",
    )
    p.add_argument(
        "--listen",
        metavar="ADDR",
        help="serve /healthz, /readyz and Prometheus /metrics on ADDR ([HOST]:PORT), e.g. --listen :9090",
    )
    p.add_argument(
        "--node",
        metavar="NAME",
        help="record this one node through its own kubelet (with --kubelet-direct; a DaemonSet pod passes its "
        "spec.nodeName), e.g. --kubelet-direct --node worker-1",
    )
    p.add_argument(
        "--print-manifests",
        action="store_true",
        help="print the Kubernetes manifests that run the recorder in the cluster (for kubectl apply -f -) and "
        "exit, e.g. --print-manifests --namespace evictlens | kubectl apply -f -",
    )
    p.add_argument(
        "--namespace",
        default="evictlens",
        metavar="NS",
        help="--print-manifests: the namespace to create and run in (default evictlens), e.g. --namespace monitoring",
    )
    p.add_argument(
        "--image",
        metavar="IMG",
        help="--print-manifests: the recorder's image (default: ghcr.io/evictlens/evictlens:VERSION, built from "
        "deploy/Containerfile), e.g. --image registry.example/evictlens:0.1.0",
    )
    p.add_argument(
        "--per-node",
        action="store_true",
        help="--print-manifests: a DaemonSet recording each node through its own kubelet instead of one "
        "Deployment for the cluster, e.g. --print-manifests --per-node",
    )
    p.add_argument(
        "--print-rbac",
        action="store_true",
        help="print the ClusterRole each access path needs and exit, e.g. --print-rbac > rbac.yaml",
    )


EXIT_STATUS = (
    "Exit status: 0 recorded, 1 the cluster could not be reached or the disk filled up once recording (the ticks "
    "recorded so far are kept), 2 bad input (a flag, the kubeconfig, the output directory, or no room to create the "
    "recording: nothing is left behind), 3 the cluster refused the credentials (401, 403, an exec plugin that "
    "failed, a client certificate it does not accept)."
)
"""``record --help``'s exit statuses, written once for every host of the command."""

MIN_INTERVAL = 1.0
"""--interval floor, in seconds (the kubelet's own housekeeping period is 10 s). ``EVICTLENS_MIN_INTERVAL``
lowers it for the test suite only, whose fake clusters tick faster than any kubelet."""


def _min_interval() -> float:
    try:
        return float(os.environ.get("EVICTLENS_MIN_INTERVAL", MIN_INTERVAL))
    except ValueError:
        return MIN_INTERVAL


def _check_ca_file(path: str) -> None:
    """--kubelet-ca must be a readable PEM bundle; say so before any connection is tried."""
    try:
        head = Path(path).read_bytes()[: 1 << 20] if Path(path).stat().st_size <= 16 << 20 else b""
    except OSError as exc:
        raise RecordingError(f"cannot read the CA bundle ({exc.strerror})", source="--kubelet-ca") from None
    if b"-----BEGIN CERTIFICATE-----" not in head:
        raise RecordingError(
            "expected a PEM CA bundle (-----BEGIN CERTIFICATE-----), e.g. the kubelet's serving CA",
            source="--kubelet-ca",
        )


def options_from_args(args: argparse.Namespace) -> RecordOptions:
    if not args.output:
        raise RecordingError("is required (the recording directory to create)", source="-o/--output")
    if args.concurrency < 1:
        raise RecordingError("expected a positive integer", source="--concurrency")
    interval = parse_duration_seconds(args.interval, flag="--interval")
    if interval < _min_interval():
        raise RecordingError(
            f"{args.interval} is under {_min_interval():g}s: the kubelet refreshes the stats it serves every 10 s "
            "(housekeeping), so faster ticks only record the same numbers again; use at least 1s",
            source="--interval",
        )
    if args.kubelet_port is not None and not 1 <= args.kubelet_port <= 65535:
        raise RecordingError(f"expected a TCP port from 1 to 65535, got {args.kubelet_port}", source="--kubelet-port")
    if args.kubelet_ca:
        _check_ca_file(args.kubelet_ca)
    retain = parse_duration_seconds(args.retain, flag="--retain") if getattr(args, "retain", None) else None
    if retain is not None and retain < 2 * interval:
        raise RecordingError(
            f"{args.retain} is shorter than two intervals (--interval {args.interval}); keep at least twice the "
            "interval, e.g. --retain 2h",
            source="--retain",
        )
    if getattr(args, "node", None) is not None and not args.kubelet_direct:
        raise RecordingError(
            "needs --kubelet-direct (one node through its own kubelet; through the API server use --nodes SELECTOR)",
            source="--node",
        )
    if getattr(args, "node", None) == "":
        raise RecordingError("expected a node name (a DaemonSet passes spec.nodeName)", source="--node")
    if getattr(args, "listen", None):
        from .health import parse_listen

        parse_listen(args.listen)
    return RecordOptions(
        output=args.output,
        kubeconfig=args.kubeconfig,
        context=args.context,
        nodes=args.nodes,
        interval=interval,
        duration=parse_duration_seconds(args.duration, flag="--duration") if args.duration else None,
        kubelet_direct=args.kubelet_direct,
        keep_raw=args.keep_raw,
        append=args.append,
        concurrency=args.concurrency,
        timeout=parse_duration_seconds(args.timeout, flag="--timeout"),
        kubelet_port=args.kubelet_port,
        kubelet_ca=args.kubelet_ca,
        status=args.status,
        watch=args.watch,
        http1=args.http1,
        retain=retain,
        listen=getattr(args, "listen", None),
        node=getattr(args, "node", None),
    )
