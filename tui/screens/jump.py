"""``:`` jumps, the same on every screen: ``:node NAME`` opens its timeline, ``:pod NAME`` its pod view (on any
node), ``:eviction POD`` its eviction, ``:kill POD`` its kernel kill; ``/`` on a screen without a table filters the
overview's."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui.screens.base import ResultsScreen

VERBS = {
    "node": "node",
    "nodes": "node",
    "no": "node",
    "pod": "pod",
    "pods": "pod",
    "po": "pod",
    "eviction": "eviction",
    "evictions": "eviction",
    "ev": "eviction",
    "kill": "kill",
    "kills": "kill",
    "oom": "kill",
}


def jump(screen: ResultsScreen, command: str) -> None:
    """``node NAME`` (``no``), ``pod NAME`` (``po``: by name on any node), ``eviction POD`` (``ev``), ``kill POD``
    (``oom``)."""
    verb, _, arg = command.strip().lstrip(":").partition(" ")
    arg = arg.strip()
    verb = verb.lower()
    what = VERBS.get(verb)
    if what is None:
        screen.notify(
            f"unknown jump :{verb}: use :node NAME, :pod NAME, :eviction POD or :kill POD", severity="warning"
        )
    elif not arg:
        screen.notify(f"say which: :{verb} NAME", severity="warning")
    elif what == "node":
        jump_node(screen, arg)
    elif what == "pod":
        screen.run_worker(
            partial(find_pod, screen, arg), thread=True, exclusive=True, exit_on_error=False, name="finding the pod"
        )
    else:
        jump_eviction(screen, arg, kills=what == "kill")


def jump_node(screen: ResultsScreen, name: str) -> None:
    from tui.screens.timeline import TimelineScreen

    names = [n.node for n in screen.view.nodes]
    hits = [n for n in names if n == name] or [n for n in names if name.lower() in n.lower()]
    if not hits:
        screen.notify(f"no node matches {name!r}", severity="warning")
        return
    if len(hits) > 1:
        screen.notify(f"{len(hits)} nodes match {name!r}: {', '.join(hits[:5])}; opening {hits[0]}", timeout=4)
    screen.app.push_screen(TimelineScreen(hits[0], at=screen.el_app.cursor_time))


def jump_eviction(screen: ResultsScreen, name: str, *, kills: bool = False) -> None:
    """The first eviction (or kernel kill, ``kills``) of a pod whose name holds ``name``, in time order."""
    from tui.screens.overview import eviction_table

    _columns, records = eviction_table(screen.view)
    for record in records:
        if record.key.startswith("k") != kills:
            continue
        if name.lower() in str(record.values[0]).lower():
            open_eviction_key(screen, record.key)
            return
    screen.notify(f"no {'kernel kill' if kills else 'eviction'} of a pod matching {name!r}", severity="warning")


def open_eviction_key(screen: ResultsScreen, key: str) -> None:
    """A row of the overview's evictions table: ``e<id>`` predicted, ``r<match>`` real only, ``k<i>.<n>`` a kill."""
    from tui.screens.eviction import EvictionScreen, RealEvictionScreen
    from tui.screens.kill import KillScreen

    if key.startswith("k"):
        index, _, nth = key[1:].partition(".")
        screen.app.push_screen(KillScreen(int(index), int(nth or 1)))
    elif key.startswith("e"):
        screen.app.push_screen(EvictionScreen(int(key[1:])))
    else:  # r<index of the match>: a real eviction the replay did not predict
        screen.app.push_screen(RealEvictionScreen(int(key[1:])))


def find_pod(screen: ResultsScreen, name: str) -> None:
    """The pods whose name holds ``name`` on any node (the recording's pod stats); the first one opens (a worker)."""
    from replay.podview import pods_named

    rec = screen.view.world()
    if rec is None:
        screen.app.call_from_thread(screen.notify, "the recording is not on disk: no pods to find", severity="warning")
        return
    hits = pods_named(rec, name)
    screen.app.call_from_thread(open_pod, screen, name, hits)


def open_pod(screen: ResultsScreen, name: str, hits: list[tuple[str, str, str, str]]) -> None:
    from tui.screens.pod import PodScreen

    if not hits:
        screen.notify(f"no pod matches {name!r} on any node", severity="warning")
        return
    if len(hits) > 1:
        shown = ", ".join(f"{ns}/{p} on {n}" for n, ns, p, _u in hits[:4])
        screen.notify(f"{len(hits)} pods match {name!r}: {shown}; opening the first", timeout=5)
    node, namespace, pod, uid = hits[0]
    screen.app.push_screen(PodScreen(node, namespace, pod, uid))


def filter_overview(screen: ResultsScreen, text: str) -> None:
    """Pop back to the overview and filter its tables by ``text`` (its filter input shown with it)."""
    from textual.widgets import Input

    from tui.screens.overview import OverviewScreen

    app = screen.app
    while len(app.screen_stack) > 1 and not isinstance(app.screen, OverviewScreen):
        app.pop_screen()
    overview = app.screen
    if isinstance(overview, OverviewScreen):
        box = overview.query_one("#filter", Input)
        box.value = text
        box.remove_class("hidden")
