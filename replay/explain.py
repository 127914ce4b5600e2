"""``evictlens explain`` — placeholder until the manager issue lands."""

from __future__ import annotations

import argparse
from typing import Any


def add_explain_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("explain", help="what would the kubelet evict, and why")
    p.set_defaults(func=lambda args: 0)
