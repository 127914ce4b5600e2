"""What cannot be opened shows the error screen with one line naming the file and the problem; no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pilot_wait import showing, until
from textual.widgets import Static

from tui.app import make_app
from tui.screens.error import ErrorScreen

pytestmark = pytest.mark.anyio


async def _problem(target: Path, cache: Path) -> tuple[str, int | None]:
    app = make_app(target, cache=cache)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: showing(app, ErrorScreen), "the error screen")
        problem = str(app.screen.query_one("#error-problem", Static).content)
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None, "the app to quit")
    return problem, app.return_code


async def test_a_directory_that_is_not_a_recording_shows_the_error_screen(tmp_path: Path, sample_cache: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    problem, status = await _problem(tmp_path, sample_cache)
    assert problem.startswith(str(tmp_path)) and "neither a recording" in problem
    assert "\n" not in problem and "Traceback" not in problem
    assert status == 2


async def test_a_missing_path_is_named(tmp_path: Path, sample_cache: Path) -> None:
    problem, _ = await _problem(tmp_path / "nope", sample_cache)
    assert problem == f"{tmp_path / 'nope'}: no such file or directory"


async def test_a_damaged_recording_names_the_damaged_file(tmp_path: Path, sample_rec: Path, sample_cache: Path) -> None:
    rec = tmp_path / "rec"
    shutil.copytree(sample_rec, rec)
    (part,) = (rec / "parts").iterdir()
    (part / "node_stats.parquet").write_bytes(b"PAR1 not really parquet")
    problem, status = await _problem(rec, sample_cache)
    assert "node_stats.parquet" in problem and "\n" not in problem
    assert status == 2


async def test_a_damaged_results_directory_is_one_line(tmp_path: Path, results_dir: Path, sample_cache: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(results_dir, out)
    (out / "result.json").write_text("{not json")
    problem, _ = await _problem(out, sample_cache)
    assert problem.startswith(f"{out / 'result.json'}: not valid JSON")
