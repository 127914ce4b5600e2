"""The port's view of the one JSON/YAML loader, :mod:`recordings.documents` (shared with ``import``)."""

from __future__ import annotations

from recordings.documents import load_document, load_documents_text

__all__ = ["load_document", "load_documents_text"]
