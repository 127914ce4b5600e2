"""evictlens recordings: the recording format, the live recorder and importers."""
