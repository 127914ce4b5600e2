"""The live recorder behind ``evictlens record``: client, poller, watches, status line, RBAC."""
