"""Eviction signals, the resources they measure and the node conditions they raise (the kubelet's words).

Mirrors pkg/kubelet/eviction/api/types.go (signal names) and pkg/kubelet/eviction/helpers.go
(signalToResource, signalToNodeCondition); the condition names are core/v1 NodeConditionType.
"""

from __future__ import annotations

from collections.abc import Mapping

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE = "containerfs.available"
CONTAINERFS_INODES_FREE = "containerfs.inodesFree"
PID_AVAILABLE = "pid.available"

SIGNALS: tuple[str, ...] = (
    MEMORY_AVAILABLE,
    ALLOCATABLE_MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
"""Every signal, in the order makeSignalObservations fills its map."""

CONTAINERFS_SIGNALS = frozenset({CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE})

RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"
RESOURCE_INODES = "inodes"
RESOURCE_PIDS = "pids"

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
PRESSURE_CONDITIONS = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)

SIGNAL_TO_RESOURCE: Mapping[str, str] = {
    MEMORY_AVAILABLE: RESOURCE_MEMORY,
    ALLOCATABLE_MEMORY_AVAILABLE: RESOURCE_MEMORY,
    IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    IMAGEFS_INODES_FREE: RESOURCE_INODES,
    CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    CONTAINERFS_INODES_FREE: RESOURCE_INODES,
    NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: RESOURCE_INODES,
    PID_AVAILABLE: RESOURCE_PIDS,
}
"""helpers.go: signalToResource."""

SIGNAL_TO_NODE_CONDITION: Mapping[str, str] = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    CONTAINERFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}
"""helpers.go: signalToNodeCondition."""
