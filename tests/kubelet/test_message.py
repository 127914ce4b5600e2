"""message.py: evictionMessage and its annotations, byte for byte (spec §6), per kubelet version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from helpers import GI, container, container_stats_json, make_pod, make_pod_stats
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.quantity import Format, Quantity
from replay.kubelet.message import (
    container_ephemeral_storage_message,
    empty_dir_message,
    eviction_message,
    go_quote,
    node_condition_message,
    pod_ephemeral_storage_message,
)
from replay.kubelet.thresholds import OP_LESS_THAN, SignalObservation, Threshold, ThresholdValue
from replay.kubelet.versions import parse_minor, profile


def _threshold(signal: str, text: str) -> Threshold:
    return Threshold(signal, OP_LESS_THAN, ThresholdValue(quantity=Quantity.parse(text)))


def _obs(available: int, capacity: int, fmt: Format = Format.BINARY_SI) -> SignalObservation:
    return SignalObservation(Quantity.new(available, fmt), Quantity.new(capacity, fmt))


MEMORY_THRESHOLDS = [_threshold("memory.available", "100Mi")]
MEMORY_OBS = {"memory.available": _obs(98693120, 8 * GI)}


# --- spec §6.1 examples --------------------------------------------------------------------------------
def test_memory_example_from_the_spec_is_byte_exact() -> None:
    pod = make_pod("web", containers=[container("web", {"memory": "100Mi"})])
    stats = make_pod_stats("web", containers=[container_stats_json("web", working_set=170074112)])
    message, annotations = eviction_message("memory", pod, stats, MEMORY_THRESHOLDS, MEMORY_OBS, profile("1.32"))
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 96380Ki. "
        "Container web was using 166088Ki, request is 100Mi, has larger consumption of memory. "
    )
    assert annotations == {
        "offending_containers": "web",
        "offending_containers_usage": "166088Ki",
        "starved_resource": "memory",
    }


def test_disk_example_from_an_upstream_e2e_log_is_byte_exact() -> None:
    pod = make_pod("p", containers=[container("innocent-container")])
    stats = make_pod_stats("p", containers=[container_stats_json("innocent-container", rootfs=8192, logs=8192)])
    thresholds = [_threshold("nodefs.available", "8284495872")]
    obs = {"nodefs.available": _obs(7366280 * 1024, 100 * GI)}
    message, annotations = eviction_message("ephemeral-storage", pod, stats, thresholds, obs, profile("1.32"))
    assert message == (
        "The node was low on resource: ephemeral-storage. Threshold quantity: 8284495872, available: 7366280Ki. "
        "Container innocent-container was using 16Ki, request is 0, has larger consumption of ephemeral-storage. "
    )
    assert annotations == {
        "offending_containers": "innocent-container",
        "offending_containers_usage": "16Ki",
        "starved_resource": "ephemeral-storage",
    }


def test_pod_without_stats_gets_no_container_part_and_no_annotations() -> None:
    pod = make_pod("web", containers=[container("web", {"memory": "100Mi"})])
    message, annotations = eviction_message("memory", pod, None, MEMORY_THRESHOLDS, MEMORY_OBS, profile("1.32"))
    assert message == "The node was low on resource: memory. Threshold quantity: 100Mi, available: 96380Ki. "
    assert annotations == {}


def test_no_threshold_sentence_without_a_matching_observation() -> None:
    pod = make_pod("web")
    stats = make_pod_stats("web", containers=[container_stats_json("web", working_set=1)])
    message, _ = eviction_message("memory", pod, stats, MEMORY_THRESHOLDS, {}, profile("1.32"))
    assert message == (
        "The node was low on resource: memory. "
        "Container web was using 1, request is 0, has larger consumption of memory. "
    )


def test_percentage_threshold_is_printed_as_a_binary_si_integer() -> None:
    pod = make_pod("p")
    thresholds = [Threshold("nodefs.available", OP_LESS_THAN, ThresholdValue(percentage=0.10000000149011612))]
    obs = {"nodefs.available": _obs(5 * GI, 107374182400)}
    message, _ = eviction_message("ephemeral-storage", pod, None, thresholds, obs, profile("1.32"))
    assert message == (
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. "
    )


@pytest.mark.parametrize(("resource", "signal"), [("inodes", "nodefs.inodesFree"), ("pids", "pid.available")])
def test_inode_and_pid_evictions_name_no_container_but_keep_annotations(resource: str, signal: str) -> None:
    pod = make_pod("p", containers=[container("c")])
    stats = make_pod_stats("p", containers=[container_stats_json("c", working_set=10**9, rootfs=10**9, logs=1)])
    thresholds = [_threshold(signal, "1000")]
    obs = {signal: _obs(123456, 1500000, Format.DECIMAL_SI)}
    message, annotations = eviction_message(resource, pod, stats, thresholds, obs, profile("1.32"))
    assert message == f"The node was low on resource: {resource}. Threshold quantity: 1k, available: 123456. "
    assert annotations == {"offending_containers": "", "offending_containers_usage": "", "starved_resource": resource}


def test_ephemeral_storage_needs_both_rootfs_and_logs() -> None:
    pod = make_pod("p", containers=[container("a"), container("b")])
    stats = make_pod_stats(
        "p", containers=[container_stats_json("a", rootfs=5000), container_stats_json("b", rootfs=1, logs=1)]
    )
    _, annotations = eviction_message("ephemeral-storage", pod, stats, [], {}, profile("1.32"))
    assert annotations["offending_containers"] == "b"
    assert annotations["offending_containers_usage"] == "2"


# --- versions (spec §6.3) ----------------------------------------------------------------------------
def _sidecar_pod() -> tuple[Any, Any]:
    pod = make_pod(
        "p",
        containers=[container("app")],
        init_containers=[container("init"), container("sidecar", restart_policy="Always")],
    )
    stats = make_pod_stats(
        "p",
        containers=[
            container_stats_json("sidecar", working_set=2048),
            container_stats_json("app", working_set=1000),
            container_stats_json("init", working_set=1536),
        ],
    )
    return pod, stats


@pytest.mark.parametrize(
    ("version", "names", "usages"),
    [
        ("1.30", "app", "1k"),
        ("1.31", "app", "1k"),
        ("1.32", "sidecar,app,init", "2Ki,1k,1536"),
        ("master", "sidecar,app,init", "2Ki,1k,1536"),
    ],
)
def test_init_and_sidecar_containers_are_named_from_1_32(version: str, names: str, usages: str) -> None:
    pod, stats = _sidecar_pod()
    _, annotations = eviction_message("memory", pod, stats, [], {}, profile(version))
    assert annotations["offending_containers"] == names
    assert annotations["offending_containers_usage"] == usages


def _resized_pod() -> Any:
    from replay.kubelet.api import parse_pod

    raw = {
        "metadata": {"name": "p", "uid": "p"},
        "spec": {"containers": [container("c", {"memory": "100Mi"})]},
        "status": {"containerStatuses": [{"name": "c", "allocatedResources": {"memory": "300Mi"}}]},
    }
    return parse_pod(raw, source="test")


@pytest.mark.parametrize(
    ("version", "gates", "offending"),
    [
        ("1.31", {"InPlacePodVerticalScaling": True}, ""),
        ("1.31", {}, "c"),
        ("1.32", {"InPlacePodVerticalScaling": True}, "c"),
    ],
)
def test_allocated_resources_replace_the_request_only_for_1_27_to_1_31_with_the_gate(
    version: str, gates: dict[str, bool], offending: str
) -> None:
    stats = make_pod_stats("p", containers=[container_stats_json("c", working_set=200 * 1024**2)])
    _, annotations = eviction_message("memory", _resized_pod(), stats, [], {}, profile(version, gates))
    assert annotations["offending_containers"] == offending


def _pod_level_pod() -> Any:
    return make_pod(
        "web",
        containers=[container("web")],
        pod_resources={"requests": {"memory": "200Mi"}, "limits": {"memory": "400Mi"}},
    )


def test_pod_level_sentence_and_annotations_from_1_34() -> None:
    stats = make_pod_stats("web", containers=[container_stats_json("web", working_set=100)], working_set=170074112)
    message, annotations = eviction_message(
        "memory", _pod_level_pod(), stats, MEMORY_THRESHOLDS, MEMORY_OBS, profile("1.34")
    )
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 96380Ki. "
        "Pod web was using 166088Ki, request is 200Mi, has larger consumption of memory. "
        "Container web was using 100, request is 0, has larger consumption of memory. "
    )
    assert annotations["offending_pod"] == "web"
    assert annotations["offending_pod_usage"] == "166088Ki"


@pytest.mark.parametrize(("version", "gates"), [("1.33", {}), ("1.34", {"PodLevelResources": False})])
def test_no_pod_level_sentence_before_1_34_or_with_the_gate_off(version: str, gates: dict[str, bool]) -> None:
    stats = make_pod_stats("web", containers=[], working_set=170074112)
    message, annotations = eviction_message("memory", _pod_level_pod(), stats, [], {}, profile(version, gates))
    assert "Pod web" not in message
    assert "offending_pod" not in annotations


def test_pod_level_sentence_only_for_memory() -> None:
    stats = make_pod_stats("web", containers=[], working_set=170074112)
    message, _ = eviction_message("ephemeral-storage", _pod_level_pod(), stats, [], {}, profile("1.34"))
    assert "Pod web" not in message


# --- property: offending containers ----------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    name: str
    kind: str  # regular | init | sidecar | ephemeral
    request: str | None


@dataclass(frozen=True)
class Usage:
    name: str
    working_set: int | None
    rootfs: int | None
    logs: int | None


_NAMES = [f"c{i}" for i in range(10)]
_REQUEST = st.one_of(
    st.none(),
    st.integers(0, 3000).map(str),
    st.integers(0, 4).map(lambda n: f"{n}Ki"),
)


@st.composite
def _pod_case(draw: st.DrawFn) -> tuple[list[Spec], list[Usage]]:
    names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=8, unique=True))
    kinds = draw(
        st.lists(st.sampled_from(["regular", "init", "sidecar", "ephemeral"]), min_size=len(names), max_size=len(names))
    )
    kinds[0] = "regular"
    specs = [Spec(n, k, None if k == "ephemeral" else draw(_REQUEST)) for n, k in zip(names, kinds, strict=True)]
    value = st.one_of(st.none(), st.integers(0, 5000))
    usages = draw(st.lists(st.builds(Usage, st.sampled_from([*names, "stranger"]), value, value, value), max_size=8))
    return specs, usages


def _build(specs: list[Spec], usages: list[Usage]) -> tuple[Any, Any]:
    def c(s: Spec) -> dict[str, Any]:
        return container(s.name, None, None, "Always" if s.kind == "sidecar" else None) | (
            {"resources": {"requests": {"memory": s.request, "ephemeral-storage": s.request}}}
            if s.request is not None
            else {}
        )

    pod = make_pod(
        "p",
        containers=[c(s) for s in specs if s.kind == "regular"],
        init_containers=[c(s) for s in specs if s.kind in ("init", "sidecar")],
        ephemeral_containers=[c(s) for s in specs if s.kind == "ephemeral"],
    )
    stats = make_pod_stats(
        "p",
        containers=[
            container_stats_json(u.name, working_set=u.working_set, rootfs=u.rootfs, logs=u.logs) for u in usages
        ],
    )
    return pod, stats


@settings(max_examples=120, deadline=None)
@given(
    case=_pod_case(),
    resource=st.sampled_from(["memory", "ephemeral-storage"]),
    version=st.sampled_from(["1.30", "1.31", "1.32", "1.34", "master"]),
)
def test_offending_containers_are_exactly_those_over_their_request(
    case: tuple[list[Spec], list[Usage]], resource: str, version: str
) -> None:
    specs, usages = case
    pod, stats = _build(specs, usages)
    kinds = {"regular", "init", "sidecar"} if parse_minor(version) >= 32 else {"regular"}
    candidates = {s.name: s for s in specs if s.kind in kinds}
    names: list[str] = []
    texts: list[str] = []
    sentences = ""
    for u in usages:
        spec = candidates.get(u.name)
        if spec is None:
            continue
        if resource == "memory":
            used = u.working_set
        else:
            used = u.rootfs + u.logs if u.rootfs is not None and u.logs is not None else None
        request = Quantity.parse(spec.request) if spec.request is not None else Quantity.zero()
        if used is not None and used > request.int_value():
            usage_text = str(Quantity.new(used, Format.BINARY_SI))
            names.append(u.name)
            texts.append(usage_text)
            sentences += (
                f"Container {u.name} was using {usage_text}, request is {request}, "
                f"has larger consumption of {resource}. "
            )
    message, annotations = eviction_message(resource, pod, stats, [], {}, profile(version))
    assert annotations == {
        "offending_containers": ",".join(names),
        "offending_containers_usage": ",".join(texts),
        "starved_resource": resource,
    }
    assert message == f"The node was low on resource: {resource}. " + sentences
    assert not any(s.kind == "ephemeral" and s.name in names for s in specs)


# --- the other observable strings ------------------------------------------------------------------------
def test_empty_dir_message_quotes_name_and_limit() -> None:
    assert empty_dir_message("cache", Quantity.parse("1Gi")) == (
        'Usage of EmptyDir volume "cache" exceeds the limit "1Gi". '
    )


def test_container_ephemeral_storage_message() -> None:
    assert container_ephemeral_storage_message("app", Quantity.parse("2Gi")) == (
        'Container app exceeded its local ephemeral storage limit "2Gi". '
    )


def test_pod_ephemeral_storage_message_is_unquoted() -> None:
    assert pod_ephemeral_storage_message(Quantity.parse("3Gi")) == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 3Gi. "
    )


@pytest.mark.parametrize(
    ("conditions", "text"),
    [
        (["DiskPressure"], "The node had condition: [DiskPressure]. "),
        (["MemoryPressure", "DiskPressure"], "The node had condition: [MemoryPressure DiskPressure]. "),
    ],
)
def test_node_condition_message_uses_go_slice_format(conditions: list[str], text: str) -> None:
    assert node_condition_message(conditions) == text


@pytest.mark.parametrize(
    ("text", "quoted"), [("a", '"a"'), ('q"x', '"q\\"x"'), ("t\tn\n", '"t\\tn\\n"'), ("\x01", '"\\x01"')]
)
def test_go_quote_escapes_like_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted
