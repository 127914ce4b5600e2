"""The PromQL an import sends: label conventions, --selector, --node and --lookback shape every query."""

from __future__ import annotations

import pytest

from kube.errors import InputError
from recordings.prometheus.build import _quantity
from recordings.prometheus.labels import Conventions, parse_selector, regex_literal
from recordings.prometheus.queries import Builder, ksm_range_queries, node_queries, pod_queries


def _all(b: Builder) -> list[str]:
    return [promql for q in node_queries(b) + pod_queries(b) for _s, promql, _l in q.alternatives]


def test_defaults_follow_kube_prometheus_stack() -> None:
    queries = _all(Builder(Conventions()))
    assert 'max by (node) (container_memory_working_set_bytes{id="/"})' in queries
    assert 'max by (instance) (node_filesystem_avail_bytes{mountpoint="/"})' in queries
    assert "max by (node, namespace, pod, container) (kubelet_container_log_filesystem_used_bytes{})" in queries


def test_each_label_convention_is_a_flag_and_the_selector_reaches_every_query() -> None:
    conv = Conventions(
        kubelet_node="kubernetes_node",
        node_exporter_node="nodename",
        ksm_node="node",
        selector=parse_selector(['cluster="prod"']),
        nodes=("w-1.example",),
    )
    b = Builder(conv)
    queries = _all(b) + list(ksm_range_queries(b).values())
    assert all('cluster="prod"' in q for q in queries)
    assert any(q.startswith("max by (kubernetes_node)") and 'kubernetes_node=~"w-1\\\\.example"' in q for q in queries)
    assert any(q.startswith("max by (nodename)") and 'nodename=~"w-1\\\\.example"' in q for q in queries)


def test_lookback_reads_each_series_over_a_bounded_window() -> None:
    queries = _all(Builder(Conventions(), "5000ms"))
    assert 'max by (node) (last_over_time(container_memory_working_set_bytes{id="/"}[5000ms]))' in queries


@pytest.mark.parametrize("bad", ["cluster=prod", 'cluster=="x"', '1abc="x"'])
def test_a_bad_selector_is_one_line_naming_the_flag(bad: str) -> None:
    with pytest.raises(InputError, match="--selector"):
        parse_selector([bad])


def test_selector_values_may_hold_commas() -> None:
    assert parse_selector(['env=~"a,b", cluster="prod"']) == ('env=~"a,b"', 'cluster="prod"')


def test_a_bad_label_name_is_one_line_naming_the_flag() -> None:
    with pytest.raises(InputError, match="--node-exporter-node-label"):
        Conventions(node_exporter_node="kubernetes.io/hostname")


def test_node_names_are_regex_literals() -> None:
    assert regex_literal("ip-10-0-0-1.ec2.internal") == "ip-10-0-0-1\\\\.ec2\\\\.internal"


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("memory", 52428800.0, "50Mi"),
        ("memory", 1610612736.0, "1536Mi"),
        ("memory", 100_000_000.0, "100M"),
        ("memory", 12345.0, "12345"),
        ("cpu", 0.1, "100m"),
        ("cpu", 2.0, "2"),
        ("ephemeral-storage", 2147483648.0, "2Gi"),
    ],
)
def test_quantities_read_back_as_quantity_string_prints_them(resource: str, value: float, text: str) -> None:
    assert _quantity(resource, value) == text
