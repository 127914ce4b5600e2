"""The screens' header: Textual's ``Header`` without its crash when a screen goes before its title is drawn.

``Header`` (textual/widgets/_header.py) sets its title in a callback that runs after it mounts and on every
title change; when the screen is switched away first (a bad recording fails at once, so the loading screen
goes within a frame), the title widget is already removed and the callback's ``query_one`` raises
``NoMatches`` — it only tolerates ``NoScreen`` — and the exception takes the whole app down.
"""

from __future__ import annotations

import contextlib

from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.events import Mount
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class TitleHeader(Header):
    def __init__(self) -> None:
        super().__init__(show_clock=False)

    def _on_mount(self, event: Mount) -> None:
        # replaces Header._on_mount (and Widget's, which only shows scrollbars a header never has)
        event.prevent_default()

        async def set_title() -> None:
            with contextlib.suppress(NoScreen, NoMatches):
                self.query_one(HeaderTitle).update(self.format_title())

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)
