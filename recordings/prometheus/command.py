"""The ``import --prometheus`` flags and their dispatch (``recordings.cli`` mounts them on ``import``).

Why apart from ``recordings.cli``: the flags are many (a Grafana data source's worth of
authentication, label conventions, files Prometheus cannot give) and only this import reads them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kube.errors import InputError

from ..documents import read_bounded

MAX_CONCURRENCY = 64
MAX_RETRIES = 20
MAX_TICKS = 2_000_000
"""Ticks an import may ask for: 30 days at 1 s is 2.6 million, 90 days at 10 s 0.8 million."""
SECRET_FILE_BYTES = 1 << 20


def add_prometheus_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "from Prometheus",
        "Build the recording from Prometheus history (also Thanos, Mimir, VictoriaMetrics) instead of files. "
        "Example: --prometheus http://prometheus:9090 --from 2024-05-20T03:00:00Z --to 2024-05-20T03:30:00Z "
        "--node worker-3 --configz configz.json --events events.json -o rec (mapping: recordings/PROMETHEUS.md)",
    )
    g.add_argument("--prometheus", metavar="URL", help="the server's base URL, e.g. http://localhost:9090")
    g.add_argument(
        "--from",
        dest="from_",
        metavar="TIME",
        help="start: RFC 3339, Unix seconds or milliseconds (a Grafana URL's from=), or now-6h",
    )
    g.add_argument("--to", metavar="TIME", help="end: RFC 3339, Unix seconds or milliseconds, now or now-1h")
    g.add_argument(
        "--step", default="10s", metavar="DURATION", help="tick spacing (default 10s: the kubelet's eviction loop)"
    )
    g.add_argument(
        "--configz",
        action="append",
        default=[],
        metavar="[NODE=]FILE",
        help="kubectl get --raw /api/v1/nodes/NODE/proxy/configz output (all nodes, or NODE=FILE)",
    )
    g.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="[NODE=]FILE",
        help="a KubeletConfiguration file (all nodes, or NODE=FILE)",
    )
    g.add_argument("--events", metavar="FILE", help="kubectl get events -A -o json: the real Evicted messages")
    g.add_argument(
        "--priority-classes",
        metavar="FILE",
        help="kubectl get priorityclasses -o json: class → priority (built-in classes are known)",
    )
    g.add_argument(
        "--selector",
        action="append",
        default=[],
        metavar="MATCHERS",
        help='label matchers added to every query, e.g. cluster="prod"',
    )
    g.add_argument(
        "--cadvisor-node-label",
        default="node",
        metavar="LABEL",
        help="label holding the node name on kubelet/cAdvisor series (default node)",
    )
    g.add_argument(
        "--node-exporter-node-label",
        default="instance",
        metavar="LABEL",
        help="label holding the node name on node-exporter series (default instance)",
    )
    g.add_argument(
        "--ksm-node-label",
        default="node",
        metavar="LABEL",
        help="label holding the node name on kube-state-metrics series (default node)",
    )
    for what in ("namespace", "pod", "container"):
        g.add_argument(
            f"--ksm-{what}-label",
            metavar="LABEL",
            help=f"label holding the {what} on kube-state-metrics pod series (default: {what}, or exported_{what} "
            "when kube-state-metrics was scraped without honor_labels; detected)",
        )
    g.add_argument("--nodefs-mountpoint", default="/", metavar="PATH", help="node-exporter mountpoint of nodefs")
    g.add_argument(
        "--imagefs-mountpoint",
        default="/var/lib/containerd",
        metavar="PATH",
        help="node-exporter mountpoint of a dedicated imagefs (none: imagefs shares nodefs)",
    )
    g.add_argument(
        "--lookback",
        metavar="DURATION",
        help="read each series as last_over_time(…[DURATION]): for data without staleness markers "
        "(backfilled blocks), so a series that stopped ends within DURATION, not 5m",
    )
    g.add_argument(
        "--window",
        metavar="DURATION",
        help="query and write this much at a time (default: the largest that fits --memory-budget for the "
        "pods and containers counted; a larger one is refused)",
    )
    g.add_argument(
        "--memory-budget",
        default="1Gi",
        metavar="SIZE",
        help="peak memory the import may use (default 1Gi); sizes the window",
    )
    g.add_argument("--bearer-token-file", metavar="FILE", help="send 'Authorization: Bearer <file content>'")
    g.add_argument("--basic-auth", metavar="USER:PASSWORD_FILE", help="basic auth; the password read from a file")
    g.add_argument("--client-cert", metavar="FILE", help="TLS client certificate (PEM)")
    g.add_argument("--client-key", metavar="FILE", help="its key (PEM)")
    g.add_argument("--ca-file", metavar="FILE", help="CA bundle to verify the server with")
    g.add_argument("--insecure-skip-tls-verify", action="store_true", help="do not verify the server's certificate")
    g.add_argument(
        "--tls-server-name",
        metavar="NAME",
        help="the name to verify the server's certificate against (and send as SNI), e.g. "
        "prometheus.monitoring.svc through a kubectl port-forward to localhost",
    )
    g.add_argument(
        "--dedup",
        choices=("true", "false"),
        help="Thanos Query: deduplicate HA replicas (sent as dedup=; default: the server's, true)",
    )
    g.add_argument(
        "--partial-response",
        choices=("true", "false"),
        help="Thanos Query: allow an answer without an unreachable store (sent as partial_response=; the "
        "server's warnings are kept in the notes either way)",
    )
    g.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="extra request header, e.g. 'X-Scope-OrgID: tenant-1' (Mimir, Cortex)",
    )
    g.add_argument("--timeout", default="60s", metavar="DURATION", help="per request (default 60s)")
    g.add_argument("--retries", type=int, default=4, metavar="N", help="retries on 429/5xx (default 4)")
    g.add_argument("--concurrency", type=int, default=4, metavar="N", help="queries in flight (default 4)")


def run_prometheus_import(args: argparse.Namespace) -> int:
    """``evictlens import --prometheus``: check the flags, import, print one summary line."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kube.duration import parse_duration_seconds

    from ..documents import load_document
    from .budget import parse_budget
    from .build import PrometheusImport, import_prometheus
    from .client import ClientOptions
    from .labels import Conventions, parse_selector
    from .timeargs import parse_time_arg

    if args.files:
        raise InputError("give either files or --prometheus, not both", source="--prometheus")
    if args.append:
        raise InputError("--append is for files; --prometheus writes a new recording", source="--append")
    if not args.from_ or not args.to:
        raise InputError("--prometheus needs --from and --to", source="--from" if not args.from_ else "--to")
    now = time.time()
    started = time.monotonic()
    conv = Conventions(
        kubelet_node=args.cadvisor_node_label,
        node_exporter_node=args.node_exporter_node_label,
        ksm_node=args.ksm_node_label,
        ksm_namespace=args.ksm_namespace_label,
        ksm_pod=args.ksm_pod_label,
        ksm_container=args.ksm_container_label,
        nodefs_mountpoint=args.nodefs_mountpoint,
        imagefs_mountpoint=args.imagefs_mountpoint,
        selector=parse_selector(args.selector),
        nodes=tuple(dict.fromkeys(args.node or ())),
    )
    configz: dict[str | None, Any] = {}
    for flag, values in (("--configz", args.configz), ("--config", args.config)):
        for value in values:
            node, path = _node_file(value)
            body = load_document(path)
            if flag == "--config":
                body = {"kubeletconfig": body}
            if not isinstance(body, dict) or not isinstance(body.get("kubeletconfig"), dict):
                raise InputError('not a /configz response ({"kubeletconfig": …})', source=path)
            configz[node] = body
    events: list[Any] = []
    if args.events:
        doc = load_document(args.events)
        items = doc.get("items") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise InputError("expected kubectl get events -A -o json (a list with items)", source=args.events)
        events = [i for i in items if isinstance(i, dict)]
    classes: dict[str, int] = {}
    if args.priority_classes:
        doc = load_document(args.priority_classes)
        for item in (doc.get("items") if isinstance(doc, dict) else None) or []:
            name, value = (item.get("metadata") or {}).get("name"), item.get("value")
            if isinstance(name, str) and isinstance(value, int):
                classes[name] = value
    start, end = parse_time_arg(args.from_, "--from", now), parse_time_arg(args.to, "--to", now)
    step = parse_duration_seconds(args.step, flag="--step")
    if step < 1:
        raise InputError(
            f"{args.step} is under 1s: the kubelet's loop is 10 s and no scrape is finer than a second", source="--step"
        )
    if (end - start) / step > MAX_TICKS:
        raise InputError(
            f"{(end - start) / step:,.0f} ticks from --from to --to at this step, more than {MAX_TICKS:,}; "
            "a longer --step or a shorter range",
            source="--step",
        )
    spec = PrometheusImport(
        client=_client_options(args, ClientOptions, parse_duration_seconds),
        start=start,
        end=end,
        step=step,
        conventions=conv,
        lookback=_lookback(args.lookback, parse_duration_seconds),
        window=parse_duration_seconds(args.window, flag="--window") if args.window else None,
        memory_budget=parse_budget(args.memory_budget),
        configz=configz,
        events=events,
        priority_classes=classes,
    )
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        manifest = import_prometheus(spec, Path(args.output), progress=progress)
    counts = manifest.counts
    print(
        f"imported {counts.get('ticks', 0)} ticks, {counts.get('nodes', 0)} nodes, {counts.get('objects', 0)} "
        f"objects, {counts.get('evictions', 0)} evictions from {spec.client.url.split('@')[-1]} into {args.output} "
        f"in {time.monotonic() - started:.1f}s"
    )
    for note in manifest.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _node_file(value: str) -> tuple[str | None, str]:
    node, sep, path = value.partition("=")
    return (node, path) if sep and not Path(value).exists() else (None, value)


def _lookback(text: str | None, parse: Any) -> str | None:
    if not text:
        return None
    seconds = parse(text, flag="--lookback")
    return f"{max(1, round(seconds * 1000))}ms"


def _client_options(args: argparse.Namespace, options: Any, parse: Any) -> Any:
    def read(path: str, flag: str) -> str:
        try:  # a token or password is a few KiB: a 2 GB (sparse) file is refused unread
            return (
                read_bounded(Path(path), f"{flag} {path}", SECRET_FILE_BYTES, "a token or password file")
                .decode("utf-8", "replace")
                .strip()
            )
        except OSError as exc:
            raise InputError(f"cannot read ({exc.strerror})", source=f"{flag} {path}") from None

    headers: dict[str, str] = {}
    for h in args.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise InputError(f"expected 'NAME: VALUE', got {h!r}", source="--header")
        headers[name.strip()] = value.strip()
    basic = None
    if args.basic_auth:
        user, sep, pw_file = args.basic_auth.partition(":")
        if not sep:
            raise InputError("expected USER:PASSWORD_FILE", source="--basic-auth")
        basic = (user, read(pw_file, "--basic-auth"))
    cert = None
    if args.client_cert or args.client_key:
        if not (args.client_cert and args.client_key):
            raise InputError("give both --client-cert and --client-key", source="--client-cert")
        cert = (args.client_cert, args.client_key)
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        raise InputError(
            f"expected 1 to {MAX_CONCURRENCY} queries in flight, got {args.concurrency}", source="--concurrency"
        )
    if not 0 <= args.retries <= MAX_RETRIES:
        raise InputError(f"expected 0 to {MAX_RETRIES} retries, got {args.retries}", source="--retries")
    return options(
        url=args.prometheus,
        bearer_token=read(args.bearer_token_file, "--bearer-token-file") if args.bearer_token_file else None,
        basic_auth=basic,
        client_cert=cert,
        ca_file=args.ca_file,
        insecure=args.insecure_skip_tls_verify,
        headers=headers,
        timeout=parse(args.timeout, flag="--timeout"),
        retries=max(0, args.retries),
        concurrency=max(1, args.concurrency),
        tls_server_name=args.tls_server_name,
        params={k: v for k, v in (("dedup", args.dedup), ("partial_response", args.partial_response)) if v is not None},
    )
