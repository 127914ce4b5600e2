"""``evictlens record`` flags, parsed once into a typed :class:`RecordOptions`."""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import RecordingError

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, *, flag: str) -> float:
    """``10s``, ``1m30s``, ``2h``, ``500ms`` or plain seconds → seconds (> 0)."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pos, value = 0, 0.0
        for m in _DURATION.finditer(text):
            if m.start() != pos:
                break
            value += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos != len(text) or not text:
            raise RecordingError(f"expected a duration like 10s, 1m30s or 2h, got {text!r}", source=flag) from None
    if value <= 0:
        raise RecordingError(f"expected a positive duration, got {text!r}", source=flag)
    return value


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

    def manifest_options(self) -> dict[str, Any]:
        """What goes into the manifest: how the data was taken, never credentials or paths."""
        out = asdict(self)
        for key in ("output", "kubeconfig", "kubelet_ca", "status"):
            out.pop(key)
        return out


def add_record_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", help="recording directory to create")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    p.add_argument("--context", help="kubeconfig context to use")
    p.add_argument("--nodes", metavar="SELECTOR", help="label selector choosing the nodes to record")
    p.add_argument("--interval", default="10s", help="time between ticks (default 10s)")
    p.add_argument("--duration", help="stop after this long (default: until Ctrl-C)")
    p.add_argument(
        "--kubelet-direct",
        action="store_true",
        help="talk to each kubelet's port 10250 (needs nodes/stats, nodes/pods, nodes/configz)",
    )
    p.add_argument("--kubelet-port", type=int, help="override the kubelet port from the node object")
    p.add_argument("--kubelet-ca", help="CA bundle for kubelet serving certificates (default: cluster CA)")
    p.add_argument("--keep-raw", action="store_true", help="also keep the raw Summary API responses")
    p.add_argument("--append", action="store_true", help="continue an existing recording")
    p.add_argument("--concurrency", type=int, default=32, help="parallel summary requests (default 32)")
    p.add_argument("--timeout", default="5s", help="per-request timeout (default 5s)")
    p.add_argument(
        "--http1",
        action="store_true",
        help="use HTTP/1.1 even where HTTP/2 is offered (many connections instead of one)",
    )
    p.add_argument("--no-watch", dest="watch", action="store_false", help="do not list/watch pods, nodes and events")
    p.add_argument(
        "--status",
        choices=("auto", "live", "plain", "none"),
        default="auto",
        help="status display on stderr (default: live line on a TTY, plain lines otherwise)",
    )
    p.add_argument("--print-rbac", action="store_true", help="print the ClusterRole each access path needs")


def options_from_args(args: argparse.Namespace) -> RecordOptions:
    if not args.output:
        raise RecordingError("is required (the recording directory to create)", source="-o/--output")
    if args.concurrency < 1:
        raise RecordingError("expected a positive integer", source="--concurrency")
    return RecordOptions(
        output=args.output,
        kubeconfig=args.kubeconfig,
        context=args.context,
        nodes=args.nodes,
        interval=parse_duration(args.interval, flag="--interval"),
        duration=parse_duration(args.duration, flag="--duration") if args.duration else None,
        kubelet_direct=args.kubelet_direct,
        keep_raw=args.keep_raw,
        append=args.append,
        concurrency=args.concurrency,
        timeout=parse_duration(args.timeout, flag="--timeout"),
        kubelet_port=args.kubelet_port,
        kubelet_ca=args.kubelet_ca,
        status=args.status,
        watch=args.watch,
        http1=args.http1,
    )
