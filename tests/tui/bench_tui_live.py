"""What the live view costs at scale (not a test): ``python tests/tui/bench_tui_live.py [--nodes 100] [--ticks 400]``.

1. The overview redrawn in place for ``--nodes`` nodes each tick (a scripted engine, so only the view is measured):
   wall time from a tick's poll to the table showing it, the process's CPU per tick, and the peak RSS after
   ``--ticks`` ticks (the history is bounded: :data:`tui.live_model.HISTORY` ticks per node).
2. With ``--open REC --node NAME``: opening an eviction there (a snapshot of the recording, its node replayed).
3. With ``--follow REC`` (a recording a live process writes or holds: ``writer.lock`` names a live pid): the real
   ``tui REC --follow`` headless, as the on-call engineer opens it: wall and CPU to the first frame with the nodes
   (the newest tick, live/preview.py) and to the engine's rows (the history replayed); run it under
   ``tests/bench_tree.py`` for the process tree's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_fake import MI, FakeEngine, event, node, source

from tui.live_app import LiveApp
from tui.widgets.record_table import RecordTable


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def overview(nodes: int, ticks: int) -> None:
    fake = FakeEngine()
    with tempfile.TemporaryDirectory() as tmp:
        app = LiveApp(source(Path(tmp) / "rec"), engine=lambda _root: fake)
        async with app.run_test(size=(160, 48)) as pilot:
            walls = []
            cpu0 = time.process_time()
            for t in range(ticks):
                start = time.monotonic()
                names = [f"node-{i:03d}" for i in range(nodes)]
                fake.push(
                    [node(t, (4000 - (t % 100) * 30) * MI, name=n, seconds=float(600 - t % 600)) for n in names],
                    [event("warning", t, node=names[t % nodes], signal="memory.available", threshold_kind="hard")],
                )
                while names[-1] not in app.live.nodes or app.live.nodes[names[-1]].tick != t:
                    await pilot.pause(0.005)
                table = app.screen.query_one("#live-nodes", RecordTable)
                assert table.row_count == nodes
                walls.append(time.monotonic() - start)
                if t in (49, ticks - 1):
                    print(f"after {t + 1} ticks: peak RSS {rss_mb():.0f} MB")
            cpu = time.process_time() - cpu0
            walls.sort()
            print(
                f"{nodes} nodes, {ticks} ticks: tick shown in median {walls[len(walls) // 2] * 1000:.0f} ms, "
                f"p95 {walls[int(len(walls) * 0.95)] * 1000:.0f} ms; CPU {cpu / ticks * 1000:.0f} ms per tick"
            )


def open_eviction(rec: Path, name: str) -> None:
    from recordings.reader import open_recording
    from replay.engine import replay
    from replay.settings import SettingsRequest
    from tui.live_source import snapshot

    start, cpu0 = time.monotonic(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        root = snapshot(rec, Path(tmp))
        copied = time.monotonic() - start
        (result,) = replay(open_recording(root), [SettingsRequest(label="as recorded")], [name])
    print(
        f"open an eviction on {name}: snapshot {copied:.2f} s, snapshot + replay "
        f"{time.monotonic() - start:.2f} s wall, "
        f"{time.process_time() - cpu0:.2f} s CPU, {len(result.evictions)} evictions, peak RSS {rss_mb():.0f} MB"
    )


async def follow(rec: Path) -> None:
    from tui.live_source import follow_source

    start, cpu0 = time.monotonic(), time.process_time()
    app = LiveApp(follow_source(rec))
    async with app.run_test(size=(160, 48)) as pilot:
        first = engine = None
        while engine is None and time.monotonic() - start < 1800:
            await pilot.pause(0.05)
            if first is None and app.live.nodes:
                table = app.screen.query_one("#live-nodes", RecordTable)
                if table.row_count:
                    first = (time.monotonic() - start, time.process_time() - cpu0, rss_mb(), table.row_count)
            if app.live.nodes and not app.catching_up:
                engine = (time.monotonic() - start, time.process_time() - cpu0, rss_mb())
        await pilot.press("q")
    if first is not None:
        print(
            f"first frame with {first[3]} nodes: {first[0]:.1f} s wall, {first[1]:.1f} s CPU, "
            f"RSS so far {first[2]:.0f} MB"
        )
    if engine is not None:
        print(
            f"the engine's rows (history replayed): {engine[0]:.1f} s wall, {engine[1]:.1f} s CPU, "
            f"peak {engine[2]:.0f} MB"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--ticks", type=int, default=400)
    p.add_argument("--open", metavar="REC")
    p.add_argument("--node")
    p.add_argument("--follow", metavar="REC")
    args = p.parse_args()
    if args.follow:
        asyncio.run(follow(Path(args.follow)))
    elif args.open:
        open_eviction(Path(args.open), args.node)
    else:
        asyncio.run(overview(args.nodes, args.ticks))


if __name__ == "__main__":
    main()
