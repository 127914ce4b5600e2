"""evictlens replay: the kubelet eviction port (``replay.kubelet``), the replay engine and the CLI."""
