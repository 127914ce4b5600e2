"""kube.quantity against the shared conformance vectors, the spec's §7.2 tables, tables
transcribed from apimachinery v0.32.0 ``pkg/api/resource/quantity_test.go``, Go quirks read from
the source, and hypothesis properties."""

from __future__ import annotations

import copy
import decimal
import json
import pickle
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kube.errors import InputError
from kube.quantity import Format, Quantity, _parse_quantity_string

BIN, DEC, EXP = Format.BINARY_SI, Format.DECIMAL_SI, Format.DECIMAL_EXPONENT
MOST_POSITIVE, MOST_NEGATIVE = 2**63 - 1, -(2**63)
CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"


def dec(i: int, exponent: int, fmt: Format | None) -> Quantity:
    """quantity_test.go decQuantity: an inf.Dec quantity worth i * 10^exponent."""
    return Quantity.from_decimal(Decimal(f"{i}E{exponent}"), fmt)


def num(i: int, exponent: int, fmt: Format | None = DEC) -> Quantity:
    """quantity_test.go intQuantity: an int64Amount quantity worth i * 10^exponent."""
    return Quantity.new_scaled(i, exponent, fmt)


Maker = Callable[[int, int, Format | None], Quantity]
BOTH_REPRESENTATIONS: dict[str, Maker] = {"int64Amount": num, "inf.Dec": dec}


# -- shared conformance vectors ------------------------------------------------------------------


def _conformance_cases() -> list[Any]:
    cases = []
    for name in ("quantity.json", "seed.json"):
        doc = json.loads((CONFORMANCE / name).read_text())
        cases += [pytest.param(c, id=c["id"]) for c in doc["cases"] if c["kind"] == "quantity"]
    return cases


CONFORMANCE_CASES = _conformance_cases()


def test_every_quantity_vector_is_loaded() -> None:
    assert len(CONFORMANCE_CASES) >= 122  # 119 in quantity.json, 3 seed vectors


@pytest.mark.parametrize("case", CONFORMANCE_CASES)
def test_conformance_vector(case: dict[str, Any]) -> None:
    given_, expect = case["input"], case["expect"]
    op = given_["op"]
    if op == "parse" and expect.get("error"):
        with pytest.raises(InputError):
            Quantity.parse(given_["value"])
    elif op == "parse":
        q = Quantity.parse(given_["value"])
        assert (q.value, q.format) == (Decimal(expect["value"]), Format(expect["format"]))
    elif op == "format":
        q = Quantity.from_decimal(Decimal(given_["value"]), Format(given_["format"]))
        assert str(q) == expect["string"]
    elif op == "parse_emit":
        assert str(Quantity.parse(given_["value"])) == expect["string"]
    elif op == "new_quantity":
        assert str(Quantity.new(given_["int_value"], Format(given_["format"]))) == expect["string"]
    elif op == "cmp":
        assert Quantity.parse(given_["a"]).cmp(Quantity.parse(given_["b"])) == expect["cmp"]
    else:
        pytest.fail(f"unknown quantity op {op!r}")


# -- spec §7.2 ----------------------------------------------------------------------------------

SPEC_WORKED_EXAMPLES = [
    ("1073741824", BIN, "1Gi"),
    ("314572800", BIN, "300Mi"),
    ("6144", BIN, "6Ki"),
    (str(1001 * 2**30), BIN, "1001Gi"),
    (str(2**40), BIN, "1Ti"),
    ("5", BIN, "5"),
    ("0.5", BIN, "500m"),
    ("1025", BIN, "1025"),
    ("1234.567", BIN, "1234567m"),
    ("1E9", DEC, "1G"),
    ("1000E6", DEC, "1G"),
    ("1000000E3", DEC, "1G"),
    ("1.08", DEC, "1080m"),
    ("108E-2", DEC, "1080m"),
    ("10800E-4", DEC, "1080m"),
    ("300E6", DEC, "300M"),
    ("1234567E6", DEC, "1234567M"),
    ("3000", DEC, "3k"),
    ("1080E-9", DEC, "1080n"),
    ("0", DEC, "0"),
    ("0", BIN, "0"),
    ("0", EXP, "0"),
    ("1E9", EXP, "1e9"),
    ("80E-3", EXP, "80e-3"),
]


@pytest.mark.parametrize(("value", "fmt", "text"), SPEC_WORKED_EXAMPLES)
def test_spec_worked_example_prints_canonically(value: str, fmt: Format, text: str) -> None:
    assert str(Quantity.from_decimal(Decimal(value), fmt)) == text
    assert str(Quantity.from_decimal(-Decimal(value), fmt)) == (f"-{text}" if text != "0" else "0")


def test_spec_constructor_examples() -> None:
    assert str(Quantity.new(1234000, DEC)) == "1234k"
    assert str(Quantity.new_milli(1024, BIN)) == "1024m"
    assert str(Quantity.new(1000000, None)) == "1e6"  # None: Go's empty/unknown Format


SPEC_EVICTION_VALUES = [
    (1000, BIN, "1k"),
    (1536, BIN, "1536"),
    (170074112, BIN, "166088Ki"),
    (98693120, BIN, "96380Ki"),
    (104857600, BIN, "100Mi"),
    (10737418400, BIN, "10737418400"),
    (327680, BIN, "320Ki"),
    (1500000, DEC, "1500k"),
    (123456, DEC, "123456"),
    (-2048, BIN, "-2Ki"),
]


@pytest.mark.parametrize(("value", "fmt", "text"), SPEC_EVICTION_VALUES)
def test_spec_eviction_value_prints_the_same_from_either_representation(value: int, fmt: Format, text: str) -> None:
    assert str(Quantity.new(value, fmt)) == text
    assert str(Quantity.from_decimal(Decimal(value), fmt)) == text


# -- upstream quantity_test.go (apimachinery v0.32.0) ---------------------------------------------

UPSTREAM_PARSE = [  # TestQuantityParse: input, decQuantity(i, exponent, format)
    ("0", 0, 0, DEC),
    ("0n", 0, 0, DEC),
    ("0u", 0, 0, DEC),
    ("0m", 0, 0, DEC),
    ("0Ki", 0, 0, BIN),
    ("0k", 0, 0, DEC),
    ("0Mi", 0, 0, BIN),
    ("0M", 0, 0, DEC),
    ("0Gi", 0, 0, BIN),
    ("0G", 0, 0, DEC),
    ("0Ti", 0, 0, BIN),
    ("0T", 0, 0, DEC),
    ("1", 1, 0, DEC),
    ("1Ki", 1024, 0, BIN),
    ("8Ki", 8 * 1024, 0, BIN),
    ("7Mi", 7 * 2**20, 0, BIN),
    ("6Gi", 6 * 2**30, 0, BIN),
    ("5Ti", 5 * 2**40, 0, BIN),
    ("4Pi", 4 * 2**50, 0, BIN),
    ("3Ei", 3 * 2**60, 0, BIN),
    ("10Ti", 10 * 2**40, 0, BIN),
    ("100Ti", 100 * 2**40, 0, BIN),
    ("5n", 5, -9, DEC),
    ("4u", 4, -6, DEC),
    ("3m", 3, -3, DEC),
    ("9", 9, 0, DEC),
    ("8k", 8, 3, DEC),
    ("50k", 5, 4, DEC),
    ("7M", 7, 6, DEC),
    ("6G", 6, 9, DEC),
    ("5T", 5, 12, DEC),
    ("40T", 4, 13, DEC),
    ("300T", 3, 14, DEC),
    ("2P", 2, 15, DEC),
    ("1E", 1, 18, DEC),
    ("1E-3", 1, -3, EXP),
    ("1e3", 1, 3, EXP),
    ("1E6", 1, 6, EXP),
    ("1e9", 1, 9, EXP),
    ("1E12", 1, 12, EXP),
    ("1e15", 1, 15, EXP),
    ("1E18", 1, 18, EXP),
    ("1e14", 1, 14, EXP),
    ("1e13", 1, 13, EXP),
    ("100.035k", 100035, 0, DEC),
    ("0.001", 1, -3, DEC),
    ("0.0005k", 5, -1, DEC),
    ("0.005", 5, -3, DEC),
    ("0.05", 5, -2, DEC),
    ("0.5", 5, -1, DEC),
    ("0.00050k", 5, -1, DEC),
    ("0.00500", 5, -3, DEC),
    ("0.05000", 5, -2, DEC),
    ("0.50000", 5, -1, DEC),
    ("0.5e0", 5, -1, EXP),
    ("0.5e-1", 5, -2, EXP),
    ("0.5e-2", 5, -3, EXP),
    ("10.035M", 10035, 3, DEC),
    ("1.2e3", 12, 2, EXP),
    ("1.3E+6", 13, 5, EXP),
    ("1.40e9", 14, 8, EXP),
    ("1.53E12", 153, 10, EXP),
    ("1.6e15", 16, 14, EXP),
    ("1.7E18", 17, 17, EXP),
    ("9.01", 901, -2, DEC),
    ("8.1k", 81, 2, DEC),
    ("7.123456M", 7123456, 0, DEC),
    ("6.987654321G", 6987654321, 0, DEC),
    ("5.444T", 5444, 9, DEC),
    ("40.1T", 401, 11, DEC),
    ("300.2T", 3002, 11, DEC),
    ("2.5P", 25, 14, DEC),
    ("1.01E", 101, 16, DEC),
    ("3.001n", 4, -9, DEC),
    ("1.1E-9", 2, -9, EXP),
    ("0.0000000001", 1, -9, DEC),
    ("0.0000000005", 1, -9, DEC),
    ("0.00000000050", 1, -9, DEC),
    ("0.5e-9", 1, -9, EXP),
    ("0.9n", 1, -9, DEC),
    ("0.00000012345", 124, -9, DEC),
    ("0.00000012354", 124, -9, DEC),
    ("9Ei", MOST_POSITIVE, 0, BIN),
    ("9223372036854775807Ki", MOST_POSITIVE, 0, BIN),
    ("12E", 12, 18, DEC),
    ("100.035Ki", 10243584, -2, BIN),
    ("0.5Mi", 2**19, 0, BIN),
    ("0.05Gi", 536870912, -1, BIN),
    ("0.025Ti", 274877906944, -1, BIN),
    ("0.000000000001Ki", 2, -9, DEC),
    (".001", 1, -3, DEC),
    (".0001k", 100, -3, DEC),
    ("1.", 1, 0, DEC),
    ("1.G", 1, 9, DEC),
]


@pytest.mark.parametrize(("text", "i", "exponent", "fmt"), UPSTREAM_PARSE)
def test_upstream_parse_gives_value_and_format(text: str, i: int, exponent: int, fmt: Format) -> None:
    want = Decimal(f"{i}E{exponent}")
    for prefix, sign in (("", 1), ("-", -1), ("+", 1)):
        q = Quantity.parse(prefix + text)
        assert (q.value, q.format) == (sign * want, fmt), prefix + text


@pytest.mark.parametrize(("text", "i", "exponent", "fmt"), UPSTREAM_PARSE)
def test_upstream_parse_from_scanned_parts_gives_the_same_value(text: str, i: int, exponent: int, fmt: Format) -> None:
    scanned = _parse_quantity_string(text)
    assert scanned is not None
    positive, _, number, denom, suffix = scanned
    rebuilt = ("" if positive else "-") + number + (f".{denom}" if denom else "") + suffix
    assert Quantity.parse(rebuilt) == Quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "positive", "value", "number", "denom", "suffix"),
    [
        ("0.025Ti", True, "0.025", "0", "025", "Ti"),
        ("1.025Ti", True, "1.025", "1", "025", "Ti"),
        ("-1.025Ti", False, "-1.025", "1", "025", "Ti"),
        (".", True, ".", "0", "", ""),
        ("-.", False, "-.", "0", "", ""),
        ("1E-3", True, "1", "1", "", "E-3"),
    ],
)
def test_upstream_scanner_splits_quantity_string(
    text: str, positive: bool, value: str, number: str, denom: str, suffix: str
) -> None:
    assert _parse_quantity_string(text) == (positive, value, number, denom, suffix)


UPSTREAM_INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]


BAD_TEXT = [*UPSTREAM_INVALID, "1.5Gx", "", "abc", "1..5", "--1", "1e", "1Ki2", "1e99999999999999999999"]


@pytest.mark.parametrize("text", BAD_TEXT)
def test_bad_text_raises_input_error_saying_what_was_expected(text: str) -> None:
    with pytest.raises(InputError) as info:
        Quantity.parse(text)
    assert info.value.problem == (
        f"{text!r} is not a Kubernetes quantity (expected a number with an "
        "optional suffix such as 100Mi, 1.5Gi, 500m, 1e3)"
    )


UPSTREAM_STRING = [  # TestQuantityString: decQuantity(i, exponent, format), String(), an alternate spelling
    (2**30, 0, BIN, "1Gi", "1024Mi"),
    (300 * 2**20, 0, BIN, "300Mi", "307200Ki"),
    (6 * 1024, 0, BIN, "6Ki", ""),
    (1001 * 2**30, 0, BIN, "1001Gi", "1025024Mi"),
    (2**40, 0, BIN, "1Ti", "1024Gi"),
    (5, 0, BIN, "5", "5000m"),
    (500, -3, BIN, "500m", "0.5"),
    (1, 9, DEC, "1G", "1000M"),
    (1000, 6, DEC, "1G", "0.001T"),
    (1000000, 3, DEC, "1G", ""),
    (1000000000, 0, DEC, "1G", ""),
    (1, -3, DEC, "1m", "1000u"),
    (80, -3, DEC, "80m", ""),
    (1080, -3, DEC, "1080m", "1.08"),
    (108, -2, DEC, "1080m", "1080000000n"),
    (10800, -4, DEC, "1080m", ""),
    (300, 6, DEC, "300M", ""),
    (1, 12, DEC, "1T", ""),
    (1234567, 6, DEC, "1234567M", ""),
    (1234567, -3, BIN, "1234567m", ""),
    (3, 3, DEC, "3k", ""),
    (1025, 0, BIN, "1025", ""),
    (0, 0, DEC, "0", ""),
    (0, 0, BIN, "0", ""),
    (1, 9, EXP, "1e9", ".001e12"),
    (1, -3, EXP, "1e-3", "0.001e0"),
    (1, -9, EXP, "1e-9", "1000e-12"),
    (80, -3, EXP, "80e-3", ""),
    (300, 6, EXP, "300e6", ""),
    (1, 12, EXP, "1e12", ""),
    (1, 3, EXP, "1e3", ""),
    (3, 3, EXP, "3e3", ""),
    (0, 0, EXP, "0", "00"),
    (1, -9, DEC, "1n", ""),
    (80, -9, DEC, "80n", ""),
    (1080, -9, DEC, "1080n", ""),
    (108, -8, DEC, "1080n", ""),
    (10800, -10, DEC, "1080n", ""),
    (1, -6, DEC, "1u", ""),
    (80, -6, DEC, "80u", ""),
    (1080, -6, DEC, "1080u", ""),
]


@pytest.mark.parametrize(("i", "exponent", "fmt", "text", "alternate"), UPSTREAM_STRING)
def test_upstream_string_is_canonical_and_reparses_to_itself(
    i: int, exponent: int, fmt: Format, text: str, alternate: str
) -> None:
    assert str(dec(i, exponent, fmt)) == text
    assert str(Quantity.parse(text)) == text
    if alternate:
        assert str(Quantity.parse(alternate)) == text
    if i:
        assert str(dec(-i, exponent, fmt)) == f"-{text}"  # and never "-0"


@pytest.mark.parametrize(
    ("text", "emitted"),
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ],
)
def test_upstream_parse_emit(text: str, emitted: str) -> None:
    assert str(Quantity.parse(text)) == emitted
    assert str(Quantity.parse(f"-{text}")) == f"-{emitted}"


@pytest.mark.parametrize(
    ("value", "fmt", "text"),
    [
        (1, DEC, "1"),
        (1000, DEC, "1k"),
        (1234000, DEC, "1234k"),
        (1024, BIN, "1Ki"),
        (1000000, None, "1e6"),
        (1024 * 1024, BIN, "1Mi"),
    ],
)
def test_upstream_new_quantity_prints_and_round_trips(value: int, fmt: Format | None, text: str) -> None:
    assert str(Quantity.new(value, fmt)) == text
    assert str(Quantity.from_decimal(Decimal(value), fmt)) == text  # the ToDec variant
    assert Quantity.parse(text).int_value() == value


@pytest.mark.parametrize(
    ("value", "fmt", "text", "exact"),
    [
        (1, DEC, "1m", True),
        (1000, DEC, "1", True),
        (1234000, DEC, "1234", True),
        (1024, BIN, "1024m", False),
        (1000000, None, "1e3", True),
        (1024 * 1024, BIN, "1048576m", False),
    ],
)
def test_upstream_new_milli_quantity_prints_and_round_trips(
    value: int, fmt: Format | None, text: str, exact: bool
) -> None:
    assert str(Quantity.new_milli(value, fmt)) == text
    if exact:
        assert Quantity.parse(text).milli_value() == value


@pytest.mark.parametrize(
    ("value", "scale", "text"),
    [
        (1, -9, "1n"),
        (1000, -9, "1u"),
        (1, -6, "1u"),
        (1000, -6, "1m"),
        (1, -3, "1m"),
        (1000, -3, "1"),
        (1, 0, "1"),
        (0, -9, "0"),
        (0, -6, "0"),
        (0, -3, "0"),
        (0, 0, "0"),
    ],
)
def test_upstream_new_scaled_quantity_prints_as_decimal_si(value: int, scale: int, text: str) -> None:
    q = Quantity.new_scaled(value, scale)
    assert (str(q), q.format) == (text, DEC)
    if scale == 0:
        assert Quantity.parse(text).int_value() == value
    if scale == -3:
        assert Quantity.parse(text).milli_value() == value


@pytest.mark.parametrize(
    ("from_scale", "milli", "value"),
    [  # TestScaledValue rows for Value and MilliValue
        (-9, True, 1),
        (-9, False, 1),
        (-6, True, 1),
        (-6, False, 1),
        (-3, True, 1),
        (-3, False, 1),
        (0, True, 1000),
        (0, False, 1),
    ],
)
def test_upstream_scaled_value_rounds_up(from_scale: int, milli: bool, value: int) -> None:
    q = Quantity.new_scaled(1, from_scale)
    assert (q.milli_value() if milli else q.int_value()) == value


def test_upstream_cmp_of_parsed_and_zero_values() -> None:
    for x, y, want in [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)]:
        assert Quantity.parse(x).cmp(Quantity.parse(y)) == want
    zero, zero_dec = Quantity.zero(DEC), dec(0, 0, DEC)
    for a, b, want in [
        (zero_dec, zero_dec, 0),
        (zero, zero_dec, 0),
        (zero_dec, zero, 0),
        (zero, zero, 0),
        (zero, dec(10, 0, DEC), -1),
        (zero, dec(-10, 0, DEC), 1),
        (dec(10, 0, DEC), zero, 1),
        (dec(-10, 0, DEC), zero, -1),
    ]:
        assert a.cmp(b) == want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [  # TestQuantityCmpInt64AndDec: intQuantity pairs
        ((901, -2), (901, -2), 0),
        ((90, -1), (901, -2), -1),
        ((901, -2), (900, -2), 1),
        ((0, 0), (0, 0), 0),
        ((0, 1), (0, -1), 0),
        ((0, -1), (0, 1), 0),
        ((800, -3), (1, 0), -1),
        ((800, -3), (79, -2), 1),
        ((MOST_POSITIVE, 0), (1, -1), 1),
        ((MOST_POSITIVE, 1), (1, 0), 1),
        ((MOST_POSITIVE, 1), (1, 1), 1),
        ((MOST_POSITIVE, 1), (0, 1), 1),
        ((MOST_POSITIVE, -16), (1, 3), -1),
        ((MOST_NEGATIVE, 0), (0, 0), -1),
        ((MOST_NEGATIVE, -18), (-1, 0), -1),
        ((MOST_NEGATIVE, -19), (-1, 0), 1),
        ((10**18, -17), (1, 1), 0),
        ((10**18, -17), (-10, 0), 1),
        ((-(10**18), -17), (-10, 0), 0),
        ((10**18, -17), (1, 0), 1),
        ((10**18 + 1, -17), (1, 1), 1),
        ((10**18 - 1, -17), (1, 1), -1),
    ],
)
def test_upstream_cmp_is_exact_across_representations(a: tuple[int, int], b: tuple[int, int], want: int) -> None:
    for make_a in BOTH_REPRESENTATIONS.values():
        for make_b in BOTH_REPRESENTATIONS.values():
            qa, qb = make_a(*a, DEC), make_b(*b, DEC)
            assert (qa.cmp(qb), qb.cmp(qa)) == (want, -want)


@pytest.mark.parametrize("make", BOTH_REPRESENTATIONS.values(), ids=BOTH_REPRESENTATIONS.keys())
def test_upstream_add_and_sub_keep_the_receivers_format_unless_it_is_zero(make: Maker) -> None:
    zero = Quantity.zero(DEC)
    for a, b, total, difference, fmt in [
        (make(10, 0, DEC), make(1, 1, DEC), 20, 0, DEC),
        (make(10, 0, DEC), make(1, 0, BIN), 11, 9, DEC),
        (make(10, 0, BIN), make(1, 0, DEC), 11, 9, BIN),
        (zero, make(50, 0, DEC), 50, -50, DEC),
        (make(50, 0, DEC), zero, 50, 50, DEC),
        (zero, zero, 0, 0, DEC),
    ]:
        assert (a.add(b).value, a.add(b).format) == (Decimal(total), fmt)
        assert (a.sub(b).value, a.sub(b).format) == (Decimal(difference), fmt)


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_upstream_adding_or_subtracting_zero_preserves_the_suffix(text: str) -> None:
    value, zero = Quantity.parse(text), Quantity.parse("0")
    assert str(value.add(zero)) == str(zero.add(value)) == str(value.sub(zero)) == text
    assert str(zero.sub(value)) == f"-{text}"


# -- Go behaviour read from the source (no upstream assertion) ------------------------------------


def test_kept_text_is_reused_verbatim_including_a_plus_sign_and_leading_zeros() -> None:
    assert [str(Quantity.parse(t)) for t in ("+1k", "1.G", "007k", "1e0")] == ["+1k", "1.G", "007k", "1e0"]


def test_arithmetic_drops_the_kept_text() -> None:
    assert str(Quantity.parse("+1k").add(Quantity.parse("0"))) == "1k"
    assert str(Quantity.parse("1.G").sub(Quantity.zero())) == "1G"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("+", DEC),
        ("-", DEC),
        (".", DEC),
        ("-.", DEC),
        ("k", DEC),
        ("Mi", BIN),
        ("Ti", BIN),
        ("e21", EXP),
    ],
)
def test_a_number_with_no_digits_parses_as_zero_on_the_int64_path(text: str, fmt: Format) -> None:
    q = Quantity.parse(text)
    assert (q.is_zero(), q.format, str(q)) == (True, fmt, "0")


@pytest.mark.parametrize("text", ["Pi", "Ei", "-Ei", ".e-12"])
def test_a_number_with_no_digits_is_refused_on_the_inf_dec_path(text: str) -> None:
    with pytest.raises(InputError):  # too little precision for the fast path; inf.Dec needs a digit
        Quantity.parse(text)


def test_decimal_si_beyond_exa_prints_without_a_suffix() -> None:
    q = Quantity.parse("1000E")  # 10^21: upstream has no DecimalSI suffix past E and emits none
    assert (q.value, str(q)) == (Decimal(10) ** 21, "1")
    assert str(dec(1, 21, EXP)) == "1e21"


def test_exponent_suffix_wraps_to_int32_like_go() -> None:
    assert Quantity.parse("1e4294967297").value == 10  # ParseInt gives 2^32+1, int32() keeps 1


def test_value_rounds_away_from_zero_on_the_int64_path() -> None:
    assert [Quantity.parse(t).int_value() for t in ("1.5", "-1.5", "100m", "-100m")] == [2, -2, 1, -1]
    assert Quantity.parse("1.0000001").milli_value() == 1001


def test_value_on_the_inf_dec_path_truncates_then_adds_one() -> None:
    assert Quantity.parse("100.035Ki").int_value() == 102436
    assert Quantity.parse("-100.035Ki").int_value() == -102434  # scale_int.go: scaledValue fast path


def test_value_overflow_is_silent_like_go() -> None:
    assert Quantity.parse("12E").int_value() == 0  # int64Amount: positiveScaleInt64 overflow gives 0
    assert Quantity.parse("12E").value == 12 * 10**18


def test_sums_leaving_int64_stay_exact() -> None:
    total = Quantity.new(MOST_POSITIVE, DEC).add(Quantity.new(1, DEC))
    assert (total.value, str(total)) == (Decimal(2**63), "9223372036854775808")


def test_subtracting_most_negative_wraps_like_int64_amount_sub() -> None:
    assert Quantity.new(5, DEC).sub(Quantity.new(MOST_NEGATIVE, DEC)).value == 5 + MOST_NEGATIVE
    assert dec(5, 0, DEC).sub(Quantity.new(MOST_NEGATIVE, DEC)).value == 5 - MOST_NEGATIVE


def test_most_negative_binary_si_prints_per_representation() -> None:
    # removeInt64Factors cannot negate MinInt64, removeBigIntFactors strips 1024^6 from it
    assert str(Quantity.new(MOST_NEGATIVE, BIN)) == "-9223372036854775808"
    assert str(dec(MOST_NEGATIVE, 0, BIN)) == "-8Ei"


def test_zero_value_quantity_takes_the_other_format_on_add() -> None:
    zero = Quantity.zero()
    assert (zero.format, str(zero), zero.int_value(), zero.sign()) == (None, "0", 0, 0)
    assert (zero.add(Quantity.parse("1Gi")).format, str(zero.add(Quantity.parse("1Gi")))) == (BIN, "1Gi")
    assert str(Quantity.parse("1k").add(Quantity.parse("1Ki"))) == "2024"


def test_overlong_numbers_are_refused_rather_than_built() -> None:
    with pytest.raises(InputError, match="too many"):
        Quantity.parse("1" * 1001)
    with pytest.raises(InputError, match="too large"):
        Quantity.parse("1e-2147483648")  # Go would build 10^(2^31) here


def test_new_refuses_values_outside_int64() -> None:
    with pytest.raises(OverflowError):
        Quantity.new(2**63, BIN)


def test_quantity_is_an_immutable_hashable_value() -> None:
    q = Quantity.parse("1Gi")
    with pytest.raises(AttributeError):
        q._u = 2
    assert {q, Quantity.parse("1024Mi"), Quantity.new(2**30, DEC)} == {q}
    assert Quantity.parse("1Ki") < Quantity.parse("1025") <= Quantity.parse("1025") < Quantity.parse("1.1k")
    assert Quantity.parse("2") > Quantity.parse("1999m") >= Quantity.parse("1999m")
    assert (repr(q), q.sign(), Quantity.parse("-1m").sign(), q.is_zero()) == ("Quantity('1Gi')", 1, -1, False)
    assert str(copy.deepcopy(Quantity.parse("+1k"))) == str(pickle.loads(pickle.dumps(Quantity.parse("+1k"))))


# -- properties ---------------------------------------------------------------------------------

SUFFIXES = [
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "e0",
    "e3",
    "E-2",
    "e+5",
    "e-9",
    "e-12",
    "e18",
    "E21",
]


def reparsed_format(q: Quantity, text: str) -> Format | None:
    """The format parse(str(q)) must have: the suffix String() chose decides it."""
    if str(q) == text:
        return q.format  # the kept text parses the same way again
    if q.is_zero():
        return DEC  # "0"
    integral = q.value == q.value.to_integral_value()
    if q.format is BIN:  # a binary suffix only for integers that are multiples of 1024, |v| >= 1024
        return BIN if integral and int(q.value) % 1024 == 0 else DEC
    if q.format is EXP:  # "e<n>" unless the canonical exponent is 0
        return DEC if integral and int(q.value) % 1000 else EXP
    return DEC


def beyond_exa(q: Quantity) -> bool:
    """DecimalSI whose canonical exponent passes 18 loses it (test_decimal_si_beyond_exa_...)."""
    v = q.value
    return q.format is DEC and not q.is_zero() and v == v.to_integral_value() and int(v) % 10**21 == 0


def check_round_trip(text: str) -> None:
    q = Quantity.parse(text)
    assume(str(q) == text or not beyond_exa(q))
    again = Quantity.parse(str(q))
    assert again.value == q.value
    assert again.format == reparsed_format(q, text)
    assert str(Quantity.parse(str(again))) == str(again)  # canonical text is a fixed point


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(SUFFIXES))
def test_integer_with_any_suffix_round_trips_through_its_text(n: int, suffix: str) -> None:
    check_round_trip(f"{n}{suffix}")


@given(
    st.sampled_from(["", "+", "-"]),
    st.from_regex(r"[0-9]{0,12}", fullmatch=True),
    st.none() | st.from_regex(r"[0-9]{0,12}", fullmatch=True),
    st.sampled_from(SUFFIXES),
)
def test_decimal_string_round_trips_through_its_text(sign: str, whole: str, frac: str | None, suffix: str) -> None:
    assume(whole or frac)  # digit-less spellings: test_a_number_with_no_digits_*
    text = sign + whole + ("" if frac is None else f".{frac}") + suffix
    check_round_trip(text)


@given(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.integers(min_value=-12, max_value=6),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.integers(min_value=-12, max_value=6),
)
def test_cmp_add_and_sub_are_exact(a: int, a_scale: int, b: int, b_scale: int) -> None:
    exact_a, exact_b = Decimal(f"{a}E{a_scale}"), Decimal(f"{b}E{b_scale}")
    with decimal.localcontext(prec=100):
        exact_sum = exact_a + exact_b
    for make in BOTH_REPRESENTATIONS.values():
        qa, qb = make(a, a_scale, DEC), make(b, b_scale, DEC)
        assert qa.cmp(qb) == (exact_a > exact_b) - (exact_a < exact_b)
        assert qa.add(qb).value == exact_sum
        assert qa.add(qb).sub(qb) == qa


@given(st.lists(st.tuples(st.integers(0, MOST_POSITIVE), st.integers(-10, 10)), max_size=30))
def test_adding_then_subtracting_the_same_quantities_cancels(terms: list[tuple[int, int]]) -> None:
    total = Quantity.zero(DEC)  # TestAddSubRoundTripAcrossScales, with generated terms
    for value, scale in terms:
        total = total.add(Quantity.new_scaled(value, scale))
    for value, scale in terms:
        total = total.sub(Quantity.new_scaled(value, scale))
    assert total.is_zero()


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_milli_quantities_report_exact_milli_value_and_rounded_value(milli: int) -> None:
    q = Quantity.new_milli(milli, DEC)
    away_from_zero = -(-abs(milli) // 1000) * (1 if milli >= 0 else -1)
    assert (q.milli_value(), q.int_value()) == (milli, away_from_zero)
