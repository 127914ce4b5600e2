"""Reusable widgets: a sortable, filterable record table and the signal plot."""

from tui.widgets.record_table import Column, RecordTable
from tui.widgets.signal_plot import SignalPlot

__all__ = ["Column", "RecordTable", "SignalPlot"]
