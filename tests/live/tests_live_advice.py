"""jvm-spike's advised settings (its description): the kubelet evicts the JVM at 2:40, the kernel never acts."""

from __future__ import annotations

ADVISED = (
    "--eviction-hard", "memory.available<10%",
    "--eviction-soft", "memory.available<20%",
    "--eviction-soft-grace-period", "memory.available=30s",
)  # fmt: skip
"""As watch's flags."""

ADVISED_FLAGS = (
    "--eviction-hard=memory.available<10%",
    "--eviction-soft=memory.available<20%",
    "--eviction-soft-grace-period=memory.available=30s",
)
"""As the scenario loader takes them (replay.scenario_cli.kubelet_flags)."""
