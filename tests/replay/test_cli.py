"""The `evictlens` command as a user runs it: a real process, exit codes and the conformance line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance"


def test_conformance_passes_every_shared_vector() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "conformance", str(CONFORMANCE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.endswith(" 0 failed") and "skipped" not in last


def test_conformance_reports_failures_with_exit_status_1(tmp_path: Path) -> None:
    vector = tmp_path / "v.json"
    vector.write_text(
        '{"schema": "kubelet-eviction-conformance/v1", "file": "v.json", "count": 1, "cases": [{"id": "q/bad",'
        ' "kind": "quantity", "kubelet_version": "1.32", "input": {"op": "parse_emit", "value": "1024Mi"},'
        ' "expect": {"string": "1024Mi"}}]}'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "conformance", str(vector)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "differs at character 1" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_unknown_vector_path_is_a_one_line_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "conformance", "/nonexistent"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "evictlens conformance: /nonexistent: no such file or directory"


# --- the one CLI edge, start-up cost, terminal output -----------------------------------------------------
import os  # noqa: E402
import re  # noqa: E402
import tomllib  # noqa: E402

import pytest  # noqa: E402

from recordings.cli_edge import EXIT_BROKEN_PIPE  # noqa: E402

SAMPLE = ["explain", "--sample", "kind-sidecars"]


def _evictlens(*argv: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "replay.cli", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env=full_env,
    )


def test_version_prints_the_package_version() -> None:
    proc = _evictlens("--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"evictlens \S+\n", proc.stdout)


def test_usage_errors_are_one_line_with_exit_status_2() -> None:
    for argv in (["explain", "--no-such-flag"], ["no-such-command"], [], ["conformance"]):
        proc = _evictlens(*argv)
        assert proc.returncode == 2, argv
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("evictlens"), proc.stderr
        assert proc.stdout == ""


def test_bad_input_is_one_line_with_exit_status_2() -> None:
    proc = _evictlens("explain", "--summary", "/nonexistent.json")
    assert proc.returncode == 2
    assert proc.stderr == "evictlens explain: /nonexistent.json: cannot read file (no such file)\n"


def test_an_unexpected_error_is_one_line_pointing_at_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import replay.cli.explain
    from replay.cli import main

    def broken(args: object) -> int:
        raise ZeroDivisionError("boom\nsecond line")

    monkeypatch.setattr(replay.cli.explain, "run_explain", broken)
    monkeypatch.delenv("EVICTLENS_DEBUG", raising=False)
    assert main(SAMPLE) == 1
    err = capsys.readouterr().err
    assert err == (
        "evictlens explain: internal error: ZeroDivisionError: boom second line (run with --debug for the traceback)\n"
    )


@pytest.mark.parametrize("argv", [["--debug", *SAMPLE], [*SAMPLE, "--debug"]])
def test_debug_shows_the_traceback(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import replay.cli.explain
    from replay.cli import main

    def broken(args: object) -> int:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(replay.cli.explain, "run_explain", broken)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "ZeroDivisionError: boom" in err


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly() -> None:
    # The reader goes away before anything is written: the very first write (or the flush at exit) fails.
    proc = subprocess.Popen(
        [sys.executable, "-m", "replay.cli", *SAMPLE], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert err == b""


def test_piping_to_head_exits_quietly() -> None:
    # Far more than a pipe buffer of output, of which `head -1` reads one line.
    script = f"{sys.executable} -m replay.cli conformance -v {CONFORMANCE} | head -1"
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == ""
    assert proc.returncode == EXIT_BROKEN_PIPE


def test_every_subcommand_has_a_description_and_every_argument_a_help() -> None:
    import argparse

    from replay.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, parser in sub.choices.items():
        if not parser.description:
            missing.append(f"{name}: description")
        for action in parser._actions:
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{name}: {'/'.join(action.option_strings) or action.dest}")
    assert missing == []
    assert set(sub.choices) >= {"explain", "replay", "conformance", "record", "import", "pack", "unpack", "info"}


def test_the_top_level_help_lists_what_each_command_says_of_itself() -> None:
    import argparse

    from replay.cli import _COMMANDS, _plugins, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    assert helps == {name: command.summary for name, command in {**_COMMANDS, **_plugins()}.items()}


def test_the_tui_is_a_command_plugin_the_core_never_names() -> None:
    from replay.cli import PLUGIN_GROUP, _plugins

    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert groups[PLUGIN_GROUP]["tui"] == "tui.cli"
    assert groups[PLUGIN_GROUP]["record"] == "flight.cli"  # the flight recorder (issue 24), above the core too
    assert "tui" in _plugins()
    assert not [p for p in (ROOT / "replay").rglob("*.py") if '"tui' in p.read_text() or "'tui" in p.read_text()]


def test_importing_the_cli_loads_neither_polars_nor_the_replay_stack() -> None:
    script = (
        "import sys, replay.cli\n"
        "replay.cli.build_parser(['--help'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'rich', 'yaml')"
        " or m.startswith('replay.kubelet'))\n"
        "print(heavy)\n"
        "replay.cli.build_parser(['explain'])\n"
        "print('polars' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "False"]


def test_kubectl_plugin_entry_point_is_declared_and_runs() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-evictlens"] == "replay.cli:kubectl_main"
    installed = Path(sys.executable).parent / "kubectl-evictlens"
    if installed.exists():  # an install made before the entry point existed has no launcher: run the function
        cmd = [str(installed)]
    else:
        cmd = [sys.executable, "-c", "import sys; from replay.cli import kubectl_main; sys.exit(kubectl_main())"]
    proc = subprocess.run([*cmd, "--version"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("kubectl evictlens ")
    proc = subprocess.run([*cmd, "record", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0
    assert "usage: kubectl evictlens record" in proc.stdout
    assert "--kubeconfig" in proc.stdout and "--context" in proc.stdout


def test_explain_fits_the_columns_it_is_given_and_never_cuts_a_value() -> None:
    wide = _evictlens(*SAMPLE, env={"COLUMNS": "200"})
    assert wide.returncode == 0, wide.stderr
    assert "┃ threshold quantity ┃" in wide.stdout  # headers whole on one line
    for columns in (100, 60, 40):
        proc = _evictlens(*SAMPLE, env={"COLUMNS": str(columns)})
        assert proc.returncode == 0, proc.stderr
        assert max(map(len, proc.stdout.splitlines())) <= columns
        assert "…" not in proc.stdout
        assert "kube-system/kube-proxy-4m8rt" in proc.stdout  # a pod name is never folded or shortened
        headers = ("signal", "available", "capacity", "threshold", "quantity", "priority", "request")
        for word in headers:  # never one letter per line: every header word appears whole
            assert re.search(rf"\b{word}\b", proc.stdout), (columns, word)


def test_explain_without_a_terminal_uses_a_wide_default() -> None:
    proc = _evictlens(*SAMPLE)
    assert proc.returncode == 0
    assert "┃ threshold quantity ┃" in proc.stdout
    assert max(map(len, proc.stdout.splitlines())) <= 132


def test_no_color_is_honoured() -> None:
    coloured = _evictlens(*SAMPLE, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in coloured.stdout
    plain = _evictlens(*SAMPLE, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not re.search(r"\x1b\[[0-9;]*3\dm", plain.stdout)  # no foreground colours


def test_explain_shows_percentages_next_to_their_resolved_bytes() -> None:
    proc = _evictlens(
        *SAMPLE,
        "--eviction-hard",
        "nodefs.available<10%",
        "--eviction-hard",
        "memory.available<5%",
        env={"COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "10% = 10508821455" in proc.stdout  # 10% of 102625208Ki, as the kubelet resolves it
    assert "49Gi (50.1%)" in proc.stdout  # available, as a share of capacity


def test_a_duration_with_days_is_refused_with_a_hint_everywhere() -> None:
    proc = _evictlens(*SAMPLE, "--eviction-hard", "memory.available<1Gi", "--eviction-pressure-transition-period", "1d")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert 'unknown unit "d" in duration "1d"' in proc.stderr and "write 24h" in proc.stderr
