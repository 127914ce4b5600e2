"""A faithful Python port of the kubelet's node-pressure eviction logic (pkg/kubelet/eviction)."""
