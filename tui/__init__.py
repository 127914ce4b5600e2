"""evictlens terminal UI (Textual)."""
