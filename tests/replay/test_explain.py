"""`evictlens explain`: end to end on the bundled sample, on every real capture, and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.cli import main

ROOT = Path(__file__).resolve().parents[2]
REALDATA = ROOT.parent / "shared" / "realdata"
SAMPLE = ROOT / "recordings" / "samples" / "kind-sidecars"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["explain", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_sample_at_1_30_names_only_regular_containers(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--sample", "kind-sidecars", "--kubelet-version", "1.30")
    (eviction,) = doc["result"]["evictions"]  # type: ignore[index]
    assert eviction["pod"] == "alloc-sidecars"
    assert eviction["message"] == (
        "The node was low on resource: memory. Threshold quantity: 1536Mi, available: 1516448Ki. "
        "Container el1 was using 48Ki, request is 0, has larger consumption of memory. "
        "Container el2 was using 48Ki, request is 0, has larger consumption of memory. "
        "Container el3 was using 48Ki, request is 0, has larger consumption of memory. "
    )
    assert eviction["annotations"]["offending_containers"] == "el1,el2,el3"
    assert eviction["grace_period_override"] == 0  # before PR #124063 (1.31)


def test_sample_at_1_32_names_sidecars_too(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--sample", "kind-sidecars", "--kubelet-version", "1.32")
    (eviction,) = doc["result"]["evictions"]  # type: ignore[index]
    assert eviction["annotations"] == {
        "offending_containers": "el1,el2,el3,el-sidecar1,el-sidecar2,el-sidecar3",
        "offending_containers_usage": "48Ki,48Ki,48Ki,3818464Ki,1452Ki,48Ki",
        "starved_resource": "memory",
    }
    assert "Container el-sidecar1 was using 3818464Ki, request is 0" in eviction["message"]
    assert eviction["grace_period_override"] == 1


def test_sample_ranks_critical_kube_proxy_but_never_evicts_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--sample", "kind-sidecars", "--kubelet-version", "1.32")
    names = [row["pod"] for row in doc["result"]["ranking"]]  # type: ignore[index]
    assert names == ["alloc-sidecars", "kube-proxy-4m8rt", "kindnet-7xq2p"]


def test_sample_human_output_shows_the_exact_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--sample", "kind-sidecars", "--kubelet-version", "1.32"]) == 0
    out = capsys.readouterr().out
    assert "alloc-sidecars" in out and "el-sidecar1" in out and "ranking for memory" in out


def _captures() -> list[tuple[Path, Path | None, Path | None]]:
    found = []
    for summary in sorted([*REALDATA.glob("*/summary"), *REALDATA.glob("*/*stats_summary*.json")]):
        pods = summary.parent / "pods"
        if not pods.exists():
            pods = summary.parent / "pods_windows.json" if "windows" in summary.name else Path("")
        node = summary.parent / "nodes.yaml"
        found.append((summary, pods if pods.is_file() else None, node if node.exists() else None))
    return found


@pytest.mark.parametrize("summary,pods,node", _captures(), ids=lambda p: p.parent.name + "/" + p.name if p else "-")
def test_explain_gives_a_verdict_on_every_real_capture(
    capsys: pytest.CaptureFixture[str], summary: Path, pods: Path | None, node: Path | None
) -> None:
    argv = ["--summary", str(summary)]
    if pods:
        argv += ["--pods", str(pods)]
    if node:
        argv += ["--node", str(node)]
    doc = run_json(capsys, *argv)
    assert doc["result"]["reason"]  # type: ignore[index]
    assert doc["observations"]


def test_explain_without_pods_says_what_it_cannot_know(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys,
        "--summary",
        str(SAMPLE / "summary.json"),
        "--eviction-hard",
        "memory.available<1.5Gi",
        "--kubelet-version",
        "1.32",
    )
    assert "requests, priority" in doc["pods"]  # type: ignore[operator]


def test_uint64_inodes_wrap_like_the_kubelet_and_are_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys,
        "--summary",
        str(REALDATA / "elastic-beats" / "stats_summary_multiple_containers.json"),
        "--kubelet-version",
        "1.32",
    )
    assert any("2^63" in note for note in doc["notes"])  # type: ignore[union-attr]
    assert doc["result"]["evictions"][0]["cause"] == "nodefs.inodesFree"  # type: ignore[index]


def test_configz_is_used_as_the_effective_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys,
        "--summary",
        str(REALDATA / "nri-kubernetes-1_35" / "summary"),
        "--configz",
        str(REALDATA / "datadog-agent" / "kubelet_config.json"),
        "--kubelet-version",
        "1.35",
    )
    thresholds = [t for row in doc["observations"] for t in row["thresholds"]]  # type: ignore[attr-defined]
    assert thresholds == []  # every evictionHard entry there is 0%, which disables it


def test_soft_threshold_explains_what_happens_if_sustained(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys,
        "--sample",
        "kind-sidecars",
        "--kubelet-version",
        "1.32",
        "--eviction-hard",
        "memory.available<100Mi",
        "--eviction-soft",
        "memory.available<2Gi",
        "--eviction-soft-grace-period",
        "memory.available=1m30s",
        "--eviction-max-pod-grace-period",
        "30",
    )
    assert doc["result"]["evictions"] == []  # type: ignore[index]
    later = doc["if_sustained"]
    assert "1m30s" in later["note"]  # type: ignore[index]
    assert later["evictions"][0]["grace_period_override"] == 1  # type: ignore[index]  # min(30, tgps=1)


@pytest.mark.parametrize(
    "content,argv,expected",
    [
        ('{"node": {"memory": ', [], "invalid JSON"),
        ("[1, 2]", [], "got a list"),
        ('{"pods": []}', [], "node"),
        (None, ["--eviction-hard", "memory.available>1Gi"], "--eviction-hard"),
        (None, ["--eviction-hard", "foo<1"], "unsupported eviction signal foo"),
        (None, ["--eviction-hard", "memory.available<1.5Gx"], "1.5Gx"),
        (None, ["--kubelet-version", "9.99"], "known versions: 1.26"),
    ],
)
def test_bad_input_is_one_line_naming_the_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, argv: list[str], expected: str
) -> None:
    summary = tmp_path / "summary.json"
    if content is None:
        summary = SAMPLE / "summary.json"
    else:
        summary.write_text(content)
    assert main(["explain", "--summary", str(summary), *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["explain", "--summary", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
