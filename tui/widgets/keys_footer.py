"""The footer every screen shows, ``? Help`` first: at 80 columns Textual's footer cuts the keys that do not fit
at the right, and the app's own bindings come after the focused widget's and the screen's."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FIRST = ("help",)
"""Actions shown first, whatever has the focus."""


class KeysFooter(Footer):
    def compose(self) -> ComposeResult:
        items = list(super().compose())
        first = [i for i in items if isinstance(i, FooterKey) and i.action in FIRST]
        yield from first
        yield from (i for i in items if i not in first)
