"""The live recorder behind ``evictlens record``: client, poller, watches, status line, RBAC."""

# Notes the recorder puts in an ok ``ticks`` row (FORMAT.md §4) when --kubelet-direct has no fresh
# /pods list for that node and tick; here, not in main.py, so ``info`` reads them without the HTTP stack.
PODS_STALE = "pods stale"  # the node's last good list stands in
PODS_MISSING = "pods missing"  # no list has come from the node yet
