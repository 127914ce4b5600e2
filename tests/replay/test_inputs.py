"""load_document / load_documents_text: formats, exact integers, and one-line errors naming the file."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from kube.errors import InputError
from replay.inputs import load_document, load_documents_text

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
UINT64_MAX = 18446744073709551615


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_json_file(tmp_path: Path) -> None:
    path = write(tmp_path, "summary.json", '{"node": {"nodeName": "n1"}, "pods": []}')
    assert load_document(path) == {"node": {"nodeName": "n1"}, "pods": []}
    assert load_document(str(path)) == {"node": {"nodeName": "n1"}, "pods": []}


def test_uint64_max_survives_exactly(tmp_path: Path) -> None:
    path = write(tmp_path, "s.json", f'{{"inodesFree": {UINT64_MAX}}}')
    value = load_document(path)["inodesFree"]
    assert type(value) is int
    assert value == UINT64_MAX


@pytest.mark.parametrize("literal", [str(UINT64_MAX + 1), "-9223372036854775809", "1" + "0" * 30])
def test_integers_beyond_64_bits_stay_exact(tmp_path: Path, literal: str) -> None:
    # orjson silently turns these into floats; the loader must fall back to an exact reader.
    doc = load_document(write(tmp_path, "big.json", f'{{"a": {literal}, "b": [1.5, 2]}}'))
    assert type(doc["a"]) is int
    assert doc["a"] == int(literal)
    assert doc["b"] == [1.5, 2]


def test_floats_stay_floats(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "f.json", '{"avg10": 72.63, "big": 1e300}'))
    assert doc == {"avg10": 72.63, "big": 1e300}


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "summary.json", '{\n  "node": {\n    "nodeName": "n1",\n')
    with pytest.raises(InputError) as info:
        load_document(path)
    error = info.value
    assert error.source == str(path)
    assert error.problem.startswith("line 4, column 1: invalid JSON (")
    assert str(error) == f"{path}: line 4, column 1: invalid JSON (unexpected end of data)"


def test_malformed_json_without_extension_reports_json_error(tmp_path: Path) -> None:
    path = write(tmp_path, "summary", '{"node": {"nodeName": "n1",, }}')
    with pytest.raises(InputError, match=r"line 1, column \d+: invalid JSON"):
        load_document(path)


def test_json_extension_is_json_only(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid JSON"):
        load_document(write(tmp_path, "pods.json", "kind: PodList\nitems: []\n"))


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(InputError) as info:
        load_document(path)
    assert str(info.value) == f"{path}: cannot read file (no such file)"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_document(tmp_path)


@pytest.mark.parametrize("content", ["", "   \n\r\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = write(tmp_path, "empty.json", content)
    with pytest.raises(InputError) as info:
        load_document(path)
    assert info.value.source == str(path)
    assert "empty" in info.value.problem


def test_yaml_with_only_comments_is_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty document"):
        load_document(write(tmp_path, "x.yaml", "# nothing here\n"))


def test_yaml_file_keeps_timestamps_as_strings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "nodes.yaml",
        "kind: List\nitems:\n- metadata:\n    creationTimestamp: 2024-05-19T08:14:14Z\n",
    )
    doc = load_document(path)
    assert doc["items"][0]["metadata"]["creationTimestamp"] == "2024-05-19T08:14:14Z"


def test_yaml_big_integers_exact(tmp_path: Path) -> None:
    assert load_document(write(tmp_path, "x.yml", f"a: {UINT64_MAX}\n")) == {"a": UINT64_MAX}


def test_yaml_without_extension(tmp_path: Path) -> None:
    assert load_document(write(tmp_path, "pods", "kind: PodList\nitems: []\n")) == {
        "kind": "PodList",
        "items": [],
    }


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "nodes.yaml", "kind: List\nitems:\n  - a: 1\n   b: 2\n")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert info.value.source == str(path)
    assert info.value.problem.startswith("line 4, column 4: invalid YAML (")


def test_multi_document_yaml_is_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "pods.yaml", "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\n---\n")
    assert [doc["metadata"]["name"] for doc in load_document(path)] == ["a", "b"]


def test_top_level_scalar_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected a JSON or YAML object or list"):
        load_document(write(tmp_path, "summary", "404 page not found\n"))


def test_crlf_json(tmp_path: Path) -> None:
    assert load_document(write(tmp_path, "s.json", '{\r\n  "a": 1\r\n}\r\n')) == {"a": 1}


def test_utf8_bom_and_utf16(tmp_path: Path) -> None:
    assert load_document(write(tmp_path, "bom.json", codecs.BOM_UTF8 + b'{"a": 1}')) == {"a": 1}
    utf16 = codecs.BOM_UTF16_LE + '{"a": "ü"}'.encode("utf-16-le")
    assert load_document(write(tmp_path, "ps.json", utf16)) == {"a": "ü"}


def test_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"line 2: not UTF-8 text \(byte 0xff"):
        load_document(write(tmp_path, "bin.json", b'{\n"a": "\xff"}'))


def test_text_variant() -> None:
    assert load_documents_text('{"a": 1}', "stdin") == {"a": 1}
    assert load_documents_text("a: 1\n", "stdin") == {"a": 1}
    assert load_documents_text("{a: 1}", "stdin") == {"a": 1}  # YAML flow style
    with pytest.raises(InputError) as info:
        load_documents_text("[1, 2", "--pods")
    assert str(info.value).startswith("--pods: line 1, column 6: invalid JSON")


@pytest.mark.parametrize(
    "name",
    sorted(
        str(path.relative_to(REALDATA))
        for path in REALDATA.glob("*/*")
        if path.is_file() and path.parent.name != "LICENSES" and path.name != "README.md"
    ),
)
def test_every_real_file_loads(name: str) -> None:
    doc = load_document(REALDATA / name)
    assert isinstance(doc, dict)


def test_real_crlf_file_is_crlf() -> None:
    path = REALDATA / "datadog-integrations-core" / "stats_summary.json"
    assert b"\r\n" in path.read_bytes()
    assert load_document(path)["node"]["nodeName"] == "gke-lenaic-pool-1-1c8b424c-wnkn"


def test_real_uint64_max() -> None:
    doc = load_document(REALDATA / "elastic-beats" / "stats_summary_multiple_containers.json")
    assert doc["node"]["fs"]["inodesFree"] == UINT64_MAX
    assert doc["node"]["runtime"]["imageFs"]["inodesFree"] == UINT64_MAX
