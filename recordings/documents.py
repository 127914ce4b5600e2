"""Load the JSON and YAML documents users hand to evictlens (summaries, pod lists, nodes, configz).

The one loader of the whole tool (``explain``, ``replay``, ``conformance`` and ``import`` all read
through it), in ``recordings`` because that is the bottom layer. Every parse failure reads the same way:
``summary.json: line 12, column 5: invalid JSON (unexpected end of data)``.

Choices, and why:

* JSON goes through orjson, which keeps integers up to uint64 max exact. Past that it silently
  turns an integer literal into a float (``18446744073709551616`` → ``1.8446744073709552e19``),
  so a document holding such a float is re-read with the stdlib ``json`` module, whose ints are
  unbounded. The typed parsers then reject what Go's decoder would reject.
* YAML is read with a safe loader that leaves timestamps as strings, as Kubernetes' own
  ``sigs.k8s.io/yaml`` (YAML → JSON) does, so the typed parsers see one shape for both formats.
* ``.json`` files are JSON only; ``.yaml``/``.yml`` files are YAML; any other name (the kubelet
  captures ``summary`` and ``pods`` have no extension) is JSON when it starts like JSON, else YAML.
* A YAML stream with several documents (``---``) loads as a list of them, so a hand-written
  multi-pod manifest reads like a bare list of pods.
* A document is read up to ``MAX_DOCUMENT_BYTES`` (256 MiB, more than a 25 000-pod list; parsed,
  such a document already takes gigabytes): ``--summary /dev/zero`` or a stray disk image is one
  line, not a read until the kernel kills the process.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import yaml

from kube.errors import InputError

from .yamlsafe import check_aliases

__all__ = ["load_document", "load_documents_text", "read_bounded"]

_YAML_SUFFIXES = frozenset({".yaml", ".yml"})
_JSON_SUFFIXES = frozenset({".json"})
_INT64_MAGNITUDE = 2**63
MAX_DOCUMENT_BYTES = 256 << 20
MAX_SCENARIO_FILE_BYTES = 64 << 20
"""A scenario file, or a pods or series file it names: a day of 1 s samples is ~2 MB of CSV."""


class _KubeYamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML loader that keeps timestamps as plain strings (Kubernetes times are strings)."""


_KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_document(path: str | Path) -> Any:
    """Read one JSON or YAML file; every failure is an :class:`InputError` naming the file."""
    source = str(path)
    file = Path(path)
    try:
        data = _read_bounded(file, source)
    except FileNotFoundError:
        raise InputError("cannot read file (no such file)", source=source) from None
    except IsADirectoryError:
        raise InputError("cannot read file (is a directory, expected a JSON or YAML file)", source=source) from None
    except PermissionError:
        raise InputError("cannot read file (permission denied)", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", source=source) from None
    text = _decode(data, source)
    suffix = file.suffix.lower()
    if suffix in _JSON_SUFFIXES:
        return _load(text, source, "json")
    if suffix in _YAML_SUFFIXES:
        return _load(text, source, "yaml")
    return _load(text, source, "sniff")


def _read_bounded(file: Path, source: str) -> bytes:
    return read_bounded(file, source, MAX_DOCUMENT_BYTES, "a JSON or YAML document")


def read_bounded(file: Path, source: str, limit: int, what: str) -> bytes:
    """The file's bytes, or an :class:`InputError` past ``limit`` (a regular file by its size, unread — a
    sparse 2 GB file costs nothing; a device or pipe such as /dev/zero after reading one byte more than the
    limit). OSErrors pass through for the caller to word."""
    too_big = f"larger than the {limit >> 20} MiB {what} may have (is it the right file?)"
    with file.open("rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise InputError(too_big, source=source)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(too_big, source=source)
    return data


def load_documents_text(text: str, source: str) -> Any:
    """Parse JSON or YAML held in a string (stdin, a recording, a test); JSON when it looks like it."""
    return _load(text.removeprefix("\ufeff"), source, "sniff")


def _decode(data: bytes, source: str) -> str:
    """Bytes to text. UTF-16 is accepted because PowerShell 5 writes ``kubectl ... > file`` that way."""
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    encoding = "utf-16" if utf16 else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            source=source,
        ) from None


def _load(text: str, source: str, mode: str) -> Any:
    if not text.strip():
        raise InputError("empty file, expected a JSON or YAML document", source=source)
    if mode == "json":
        doc = _load_json(text, source)
    elif mode == "yaml":
        doc = _load_yaml(text, source)
    elif text.lstrip()[:1] in ("{", "["):
        try:
            doc = _load_json(text, source)
        except InputError as json_error:
            # YAML flow style is a superset of JSON; when it fails too, the JSON error is the useful one.
            try:
                doc = _load_yaml(text, source)
            except InputError:
                raise json_error from None
    else:
        doc = _load_yaml(text, source)
    if doc is None:
        raise InputError("empty document, expected a JSON or YAML object or list", source=source)
    if not isinstance(doc, dict | list):
        raise InputError(
            f"expected a JSON or YAML object or list, got a plain {type(doc).__name__} at the top level",
            source=source,
        )
    return doc


def _load_json(text: str, source: str) -> Any:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"line {exc.lineno}, column {exc.colno}: invalid JSON ({exc.msg})", source=source) from None
    if _has_huge_float(doc):
        # orjson degraded an integer beyond 64 bits to a float; the stdlib keeps it exact.
        doc = json.loads(text)
    return doc


def _has_huge_float(node: Any) -> bool:
    """True if orjson may have turned an over-64-bit integer literal into a float."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and abs(item) >= _INT64_MAGNITUDE and item.is_integer():
            return True
    return False


def _load_yaml(text: str, source: str) -> Any:
    try:
        loader = _KubeYamlLoader(text)  # the reader refuses NUL and other control bytes here already
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML ({exc})", source=source) from None
    try:
        docs = []
        while loader.check_node():
            node = loader.get_node()
            check_aliases(node, source)  # before building: a billion laughs is one line, not gigabytes
            doc = loader.construct_document(node)
            if doc is not None:
                docs.append(doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "syntax error"
        raise InputError(f"{where}invalid YAML ({problem})", source=source) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML ({exc})", source=source) from None
    finally:
        loader.dispose()
    if not docs:
        return None
    return docs[0] if len(docs) == 1 else docs
