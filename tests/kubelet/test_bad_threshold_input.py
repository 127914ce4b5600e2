"""Thresholds the kubelet's parser cannot turn into a replayable number are one line and exit 2.

``NaN%`` (Go's ParseFloat takes it; the threshold it gives is implementation-dependent) and
``1e400%`` (past float64: ParseFloat's "value out of range") used to end explain, replay and
what-if in ValueError, OverflowError or StopIteration; so did an int32 field given more.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_here import evictlens_here

from kube.errors import InputError
from replay.kubelet.thresholds import decimal_to_f32, parse_percentage

ROOT = Path(__file__).resolve().parents[2]
REALDATA = Path(os.environ.get("EVICTLENS_REALDATA", ROOT.parent / "shared" / "realdata"))
SUMMARY = REALDATA / "elastic-beats" / "stats_summary.json"
NAN = "eviction percentage NaN% is not a number; expected a number such as 10%"
OUT_OF_RANGE = 'strconv.ParseFloat: parsing "1e400": value out of range'


def _evictlens(*args: str) -> subprocess.CompletedProcess[str]:
    return evictlens_here(*args)  # in this process, through the CLI edge


def _one_line(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.count("\n") == 1 and "internal error" not in res.stderr, res.stderr
    return res.stderr.strip()


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bad-thresholds") / "rec"
    res = _evictlens("import", str(SUMMARY), "-o", str(out))
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize("text", ["NaN%", "nan%", "-NaN%", "+nan%"])
def test_a_nan_percentage_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="is not a number"):
        parse_percentage(text)


@pytest.mark.parametrize("text", ["1e400", "-1e400", "1e39"])
def test_a_number_past_float32_is_out_of_range_as_in_go(text: str) -> None:
    with pytest.raises(InputError, match=f'^strconv.ParseFloat: parsing "{text}": value out of range$'):
        decimal_to_f32(text)


@pytest.mark.parametrize(("value", "expected"), [("NaN%", NAN), ("1e400%", OUT_OF_RANGE)], ids=["NaN", "1e400"])
def test_explain_refuses_the_flag_in_one_line(value: str, expected: str) -> None:
    line = _one_line(_evictlens("explain", "--sample", "kind-sidecars", "--eviction-hard", f"nodefs.available<{value}"))
    assert line == f"evictlens explain: --eviction-hard: evictionHard[nodefs.available]: {expected}"


@pytest.mark.parametrize("command", ["replay", "whatif"])
@pytest.mark.parametrize(("value", "expected"), [("NaN%", NAN), ("1e400%", OUT_OF_RANGE)], ids=["NaN", "1e400"])
def test_replay_and_whatif_refuse_the_flag_in_one_line(rec: Path, command: str, value: str, expected: str) -> None:
    line = _one_line(_evictlens(command, str(rec), "--eviction-hard", f"nodefs.available<{value}"))
    assert line.startswith(f"evictlens {command}: --eviction-hard: evictionHard[nodefs.available]: {expected}")


@pytest.mark.parametrize(("value", "expected"), [("NaN%", NAN), ("1e400%", OUT_OF_RANGE)], ids=["NaN", "1e400"])
def test_a_config_file_with_the_value_is_refused_naming_the_file(
    rec: Path, tmp_path: Path, value: str, expected: str
) -> None:
    cfg = tmp_path / "kubelet.yaml"
    cfg.write_text(f'kind: KubeletConfiguration\nevictionHard:\n  nodefs.available: "{value}"\n')
    line = _one_line(_evictlens("replay", str(rec), "--config", str(cfg)))
    assert f"{cfg} (KubeletConfiguration): evictionHard[nodefs.available]: {expected}" in line


def test_a_nan_minimum_reclaim_is_refused() -> None:
    line = _one_line(
        _evictlens("explain", "--sample", "kind-sidecars", "--eviction-minimum-reclaim", "memory.available=nan%")
    )
    assert line.endswith(
        "evictionMinimumReclaim[memory.available]: eviction percentage nan% is not a number; "
        "expected a number such as 10%"
    )


def test_a_max_pod_grace_period_past_int32_is_refused_as_the_kubelet_does(rec: Path, tmp_path: Path) -> None:
    big = "99999999999999999999"
    line = _one_line(_evictlens("replay", str(rec), "--eviction-max-pod-grace-period", big))
    assert f'invalid argument "{big}" for "--eviction-max-pod-grace-period" flag: strconv.ParseInt: ' in line
    cfg = tmp_path / "kubelet.yaml"
    cfg.write_text(f"kind: KubeletConfiguration\nevictionMaxPodGracePeriod: {big}\n")
    line = _one_line(_evictlens("whatif", str(rec), "--config", str(cfg)))
    assert (
        f"evictionMaxPodGracePeriod: json: cannot unmarshal number {big} into Go struct field "
        "KubeletConfiguration.evictionMaxPodGracePeriod of type int32"
    ) in line
