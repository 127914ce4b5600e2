"""Fixtures for the recordings tests; the helpers themselves live in rec_support.py."""

from __future__ import annotations

from rec_support import fake_cluster, server

__all__ = ["fake_cluster", "server"]
