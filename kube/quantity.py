"""Kubernetes ``resource.Quantity``, an exact port of k8s.io/apimachinery ``pkg/api/resource``.

Source: quantity.go, amount.go, suffix.go, math.go, scale_int.go. Their parse, format and arithmetic
code is unchanged from apimachinery v0.30.0 (kubelet 1.30) through v0.32 to master (history read up
to 2026-07), so one port serves every kubelet version evictlens claims. Go's int32/int64 wrap-around
is reproduced where it shows.

Go holds a quantity as an ``int64Amount`` (value * 10^scale) or an ``inf.Dec`` (unscaled * 10^-scale).
Parsing, printing and comparing agree for both, but ``Value()`` rounds differently, so a
:class:`Quantity` keeps the exact mantissa and exponent plus a flag naming the path Go would take.
Not reproduced: Go's Cmp turning its receiver into an inf.Dec in place (ours is immutable), and
numbers over ``_MAX_DIGITS`` digits, which Go would build as huge big.Ints and we reject.
"""

from __future__ import annotations

import enum
import functools
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Final

from kube.errors import InputError

_MAX_INT64: Final = (1 << 63) - 1
_MIN_INT64: Final = -(1 << 63)
_SIGNED_INT: Final = re.compile(r"[+-]?[0-9]+")
_QUANTITY: Final = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_INF_DEC: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")
# Go builds big.Ints of any size; we refuse numbers over this many digits instead of stalling.
_MAX_DIGITS: Final = 1000


class Format(enum.StrEnum):
    """quantity.go: Format – how a quantity prints. ``None`` stands for Go's empty/unknown Format."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


# suffix.go: newSuffixer / fastLookup (the exponent is base 10 for DecimalSI, base 2 for BinarySI).
_DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX_OF: Final = {exp: suf for suf, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_OF: Final = {exp: suf for suf, exp in _BINARY_SUFFIXES.items()}


def _wrap(x: int, bits: int) -> int:
    """Go's two's-complement overflow for intN."""
    half = 1 << (bits - 1)
    return (x + half) % (1 << bits) - half


def _fits64(x: int) -> bool:
    return _MIN_INT64 <= x <= _MAX_INT64


def _go_rem(a: int, b: int) -> int:
    """Go's ``%``: truncated, so the result takes the sign of ``a`` (Python's takes the sign of ``b``)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _big_int64(x: int) -> int:
    """math/big Int.Int64: the low 64 bits of |x|, then the sign, wrapping like Go."""
    v = _wrap(abs(x) & ((1 << 64) - 1), 64)
    return _wrap(-v, 64) if x < 0 else v


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """math.go: removeInt64Factors / removeBigIntFactors – value == result * base**times."""
    result, times = abs(value), 0
    while result >= base and result % base == 0:
        result //= base
        times += 1
    return (-result if value < 0 else result), times


def _not_a_quantity(text: str) -> InputError:
    return InputError(
        f"{text!r} is not a Kubernetes quantity "
        "(expected a number with an optional suffix such as 100Mi, 1.5Gi, 500m, 1e3)"
    )


def _parse_quantity_string(s: str) -> tuple[bool, str, str, str, str] | None:
    """quantity.go: parseQuantityString – (positive, value, num, denom, suffix); None is ErrFormatWrong.

    Upstream's hand-written scanner accepts exactly this grammar: sign, leading zeros (dropped from
    num, which defaults to "0"), digits, optional "." and digits, suffix letters, optional signed
    digits. So "+", "." and "1.G" scan; the suffix itself is checked later by interpret. (For an
    all-zero number upstream returns value "0"; only the inf.Dec path reads value, and zero never gets there.)
    """
    m = _QUANTITY.fullmatch(s)
    if m is None:
        return None
    return m[1] != "-", s[: m.start(4)], m[2] or "0", m[3] or "", m[4]


def _interpret(suffix: str) -> tuple[int, int, Format] | None:
    """suffix.go: suffixHandler.interpret – (base, exponent, format); None is ErrSuffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _SIGNED_INT.fullmatch(suffix[1:]):
        parsed = int(suffix[1:])  # strconv.ParseInt(.., 10, 64), then int32(parsed) wraps
        if _fits64(parsed):
            return 10, _wrap(parsed, 32), Format.DECIMAL_EXPONENT
    return None


def fits_int64(text: str) -> bool:
    """Whether the quantity ``text`` (valid) fits the int64 the kubelet reads it into (``Value()``, rounded up).

    Go never says when it does not: ``ParseQuantity`` caps a binary value at 2^63−1 (99999Ei) and ``Value()``
    of a larger decimal one overflows to 0 (1e19). A flag or file value outside int64 is refused by evictlens,
    not used as Go would silently use it."""
    scanned = _parse_quantity_string(text)
    interpreted = _interpret(scanned[4]) if scanned is not None else None
    if scanned is None or interpreted is None:
        return False
    base, exponent, _fmt = interpreted
    if abs(exponent) > _MAX_DIGITS:
        return False
    exact = Decimal(scanned[1] or "0") * (Decimal(base) ** exponent)
    whole = exact.to_integral_value(rounding=ROUND_CEILING if exact >= 0 else ROUND_FLOOR)
    return _MIN_INT64 <= whole <= _MAX_INT64


def _inf_dec_set_string(s: str) -> tuple[int, int] | None:
    """gopkg.in/inf.v0 dec.go: Dec.SetString – (unscaled, scale) of [sign]digits[.digits], or None."""
    m = _INF_DEC.fullmatch(s)
    if m is None or not (m[2] or m[3]):
        return None
    unscaled = int(m[2] + (m[3] or ""))
    return (-unscaled if m[1] == "-" else unscaled), len(m[3] or "")


def _int64_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """amount.go: int64Amount.Add – (value, scale), or None where Go reports overflow."""
    (av, ascale), (bv, bscale) = a, b
    if bv == 0:
        return a
    if av == 0:
        return b
    if ascale != bscale:  # positiveScaleInt64 on the larger scale, which fails on overflow
        (big, big_scale), (other, scale) = (a, b) if ascale > bscale else (b, a)
        if big_scale - scale > 19 or not _fits64(shifted := big * 10 ** (big_scale - scale)):
            return None
        av, bv, ascale = shifted, other, scale
    total = av + bv
    return (total, ascale) if _fits64(total) else None


def _go_pow10_int64(k: int) -> int:
    """``int64(math.Pow10(k))``, k > 0: past 10^18 the float is out of range and amd64 gives MinInt64."""
    return 10**k if k <= 18 else _MIN_INT64


@functools.total_ordering
class Quantity:
    """quantity.go: Quantity – an exact decimal with a Format and, when parsed canonical, its own text.

    Immutable: the Go methods that mutate (Add, Sub) return a new Quantity here.
    """

    __slots__ = ("_dec", "_e", "_format", "_text", "_u")
    _u: int  # mantissa (int64Amount.value or inf.Dec unscaled)
    _e: int  # base-10 exponent (int64Amount.scale, or -inf.Dec scale)
    _dec: bool  # Go holds it as inf.Dec rather than int64Amount
    _format: Format | None
    _text: str | None  # Quantity.s: the parsed string, kept only when already canonical

    @classmethod
    def _make(cls, u: int, e: int, dec: bool, fmt: Format | None, text: str | None = None) -> Quantity:
        q = object.__new__(cls)
        for name, val in (("_u", u), ("_e", e), ("_dec", dec), ("_format", fmt), ("_text", text)):
            object.__setattr__(q, name, val)
        return q

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[object, tuple[int, int, bool, Format | None, str | None]]:
        return Quantity._make, (self._u, self._e, self._dec, self._format, self._text)

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """quantity.go: ParseQuantity – the int64 fast path, else the inf.Dec path with its rounding."""
        if text == "":
            raise _not_a_quantity(text)
        if text == "0":
            return cls._make(0, 0, False, Format.DECIMAL_SI, text)
        scanned = _parse_quantity_string(text)
        interpreted = _interpret(scanned[4]) if scanned is not None else None
        if scanned is None or interpreted is None:
            raise _not_a_quantity(text)
        positive, value, num, denom, _ = scanned
        base, exponent, fmt = interpreted

        scale, mantissa = 0, 1
        if fmt is Format.BINARY_SI:
            precision = -1
            if exponent >= 0 and not denom:
                mantissa = 1 << exponent
                # int32(float32(exponent)*3/10) is exact for the exponents 10..60 that reach here
                precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            scale = exponent
            precision = 18 - (len(num) + len(denom))  # maxInt64Factors
        if precision >= 0:
            scale = _wrap(scale - len(denom), 32)
            if scale >= -9:
                shifted = num + denom  # at most 18 digits, so ParseInt cannot fail
                result = int(shifted) * mantissa
                if _fits64(result):
                    canonical = (
                        exponent % 10 == 0 and int(shifted) & 7 != 0
                        if fmt is Format.BINARY_SI
                        else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                    )
                    return cls._make(result if positive else -result, scale, False, fmt, text if canonical else None)

        if len(value) > _MAX_DIGITS:
            raise InputError(f"{text[:40]!r}... has over {_MAX_DIGITS} digits, too many to hold exactly")
        parsed = _inf_dec_set_string(value)
        if parsed is None:  # ErrNumeric
            raise _not_a_quantity(text)
        unscaled, dscale = parsed
        if base == 10:
            dscale = _wrap(dscale + _wrap(-exponent, 32), 32)
        else:
            unscaled <<= exponent
        negative, unscaled = unscaled < 0, abs(unscaled)
        if unscaled:  # round non-zero values up (away from zero) to whole nanos: "0.9n" is 1n
            shift = 9 - dscale
            if shift > _MAX_DIGITS:
                raise InputError(f"{text!r} is too large a quantity to hold exactly")
            if shift >= 0:
                unscaled *= 10**shift
            elif -shift > unscaled.bit_length():
                unscaled = 1
            else:
                whole, rest = divmod(unscaled, 10**-shift)
                unscaled = whole + (1 if rest else 0)
            dscale = 9
            if fmt is Format.BINARY_SI and unscaled > _MAX_INT64 * 10**9:  # capped at maxAllowed
                unscaled, dscale = _MAX_INT64, 0
            elif fmt is Format.BINARY_SI and unscaled < 10**9:  # 0 < value < 1: avoid rounding
                fmt = Format.DECIMAL_SI
        return cls._make(-unscaled if negative else unscaled, -dscale, True, fmt)

    @classmethod
    def new(cls, value: int, fmt: Format | None) -> Quantity:
        """quantity.go: NewQuantity."""
        return cls.new_scaled(value, 0, fmt)

    @classmethod
    def new_milli(cls, value: int, fmt: Format | None) -> Quantity:
        """quantity.go: NewMilliQuantity – value/1000."""
        return cls.new_scaled(value, -3, fmt)

    @classmethod
    def new_scaled(cls, value: int, scale: int, fmt: Format | None = Format.DECIMAL_SI) -> Quantity:
        """quantity.go: NewScaledQuantity – value * 10^scale, DecimalSI (``fmt`` serves new/new_milli)."""
        if not _fits64(value):
            raise OverflowError(f"{value} does not fit Go's int64")
        return cls._make(value, scale, False, fmt)

    @classmethod
    def from_decimal(cls, value: Decimal, fmt: Format | None) -> Quantity:
        """quantity.go: NewDecimalQuantity – an inf.Dec with the Decimal's own exponent."""
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int):
            raise ValueError(f"{value} is not a finite decimal")
        mantissa = int("".join(map(str, digits)))
        return cls._make(-mantissa if sign else mantissa, exponent, True, fmt)

    @classmethod
    def zero(cls, fmt: Format | None = None) -> Quantity:
        """Go's zero value ``resource.Quantity{Format: fmt}``."""
        return cls._make(0, 0, False, fmt)

    # -- accessors -------------------------------------------------------------------------

    @property
    def value(self) -> Decimal:
        """The exact value; its exponent is Go's scale."""
        return Decimal(f"{self._u}E{self._e}")

    @property
    def format(self) -> Format | None:
        return self._format

    def is_zero(self) -> bool:
        """quantity.go: IsZero."""
        return self._u == 0

    def sign(self) -> int:
        """quantity.go: Sign."""
        return (self._u > 0) - (self._u < 0)

    def int_value(self) -> int:
        """quantity.go: Value – rounded up (away from zero on the int64 path; see _scaled_value)."""
        return self._scaled_value(0)

    def milli_value(self) -> int:
        """quantity.go: MilliValue – ceil(q * 1000), same rounding as int_value."""
        return self._scaled_value(-3)

    def _scaled_value(self, scale: int) -> int:
        """quantity.go: ScaledValue, via amount.go AsScaledInt64 or scale_int.go scaledValue.

        Both overflow silently as Go does (int64 path: 0; inf.Dec path: wrapped bits). The inf.Dec
        path truncates then adds one, so a negative fraction there comes out one above its ceiling.
        """
        u, e = self._u, self._e
        if not self._dec:
            if e < scale:  # negativeScaleInt64: away from zero
                k = scale - e
                whole, rest = divmod(abs(u), 10**k) if k <= 19 else (0, abs(u))
                whole += 1 if rest else 0
                return whole if u >= 0 else -whole
            if u == 0 or e - scale > 19:  # positiveScaleInt64 overflow yields 0
                return 0
            result = u * 10 ** (e - scale)
            return result if _fits64(result) else 0
        dif = scale - e
        if dif == 0:
            return _big_int64(u)
        if dif < 0:
            return _wrap(_big_int64(u) * _go_pow10_int64(-dif), 64)
        if u < _MAX_INT64 and dif < 19:
            x, divide = _big_int64(u), 10**dif
            whole = abs(x) // divide * (1 if x >= 0 else -1)  # Go's truncating division
            return _wrap(whole + 1, 64) if x - whole * divide else whole
        if dif > abs(u).bit_length():
            whole, rest = (0 if u >= 0 else -1), u
        else:
            whole, rest = divmod(u, 10**dif)  # big.Int DivMod is Euclidean, like Python's here
        return _wrap(_big_int64(whole) + 1, 64) if rest else _big_int64(whole)

    # -- text ------------------------------------------------------------------------------

    def __str__(self) -> str:
        """quantity.go: String – the kept parse text, else CanonicalizeBytes."""
        return self._text if self._text is not None else self._canonicalize()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def _canonicalize(self) -> str:
        """quantity.go: CanonicalizeBytes – largest suffix with an integer mantissa, never rounding."""
        if self._u == 0:
            return "0"
        fmt = self._format
        if fmt is Format.BINARY_SI:
            # BinarySI between -1024 and 1024, or not an integer, prints as DecimalSI
            if -1024 < self.value < 1024 or (self._e < 0 and self._u % 10**-self._e):
                fmt = Format.DECIMAL_SI
            else:  # AsCanonicalBase1024Bytes; removeInt64Factors cannot negate MinInt64
                whole = self._u * 10**self._e if self._e >= 0 else self._u // 10**-self._e
                number, times = (whole, 0) if whole == _MIN_INT64 and not self._dec else _remove_factors(whole, 1024)
                return f"{number}{_BINARY_SUFFIX_OF.get(times * 10, '')}"
        elif fmt is None:
            fmt = Format.DECIMAL_EXPONENT
        number, exponent = self._canonical_bytes()
        if fmt is Format.DECIMAL_SI:  # past E (10^18) upstream has no suffix and prints none
            return f"{number}{_DECIMAL_SUFFIX_OF.get(exponent, '')}"
        return f"{number}e{exponent}" if exponent else str(number)

    def _canonical_bytes(self) -> tuple[int, int]:
        """amount.go: int64Amount/infDecAmount.AsCanonicalBytes – lower the exponent to a multiple of 3."""
        mantissa, times = _remove_factors(self._u, 10)
        if not self._dec:
            exponent = _wrap(self._e + times, 32)
            rem = _go_rem(exponent, 3)
            factor, down = (10, 1) if rem in (1, -2) else (100, 2) if rem in (2, -1) else (1, 0)
            if _fits64(mantissa * factor):
                return mantissa * factor, _wrap(exponent - down, 32)
        exponent = _wrap(_wrap(self._e, 32) + times, 32)  # int32(-Dec.Scale()) + times
        while _go_rem(exponent, 3) != 0:
            mantissa *= 10
            exponent = _wrap(exponent - 1, 32)
        return mantissa, exponent

    # -- arithmetic and comparison ---------------------------------------------------------

    def add(self, other: Quantity) -> Quantity:
        """quantity.go: (*Quantity).Add – drops the kept text; a zero receiver takes other's Format."""
        return self._combine(other, other._u)

    def sub(self, other: Quantity) -> Quantity:
        """quantity.go: (*Quantity).Sub – as add; int64Amount.Sub negates with int64 wrap-around."""
        return self._combine(other, -other._u)

    def _combine(self, other: Quantity, other_u: int) -> Quantity:
        fmt = other._format if self._u == 0 else self._format
        if not self._dec and not other._dec:
            summed = _int64_add((self._u, self._e), (_wrap(other_u, 64), other._e))
            if summed is not None:
                return Quantity._make(summed[0], summed[1], False, fmt)
        e = min(self._e, other._e)  # inf.Dec.Add/Sub: the larger scale
        return Quantity._make(self._u * 10 ** (self._e - e) + other_u * 10 ** (other._e - e), e, True, fmt)

    def cmp(self, other: Quantity) -> int:
        """quantity.go: Cmp – exact numeric comparison whatever the formats."""
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return self.cmp(other) == 0 if isinstance(other, Quantity) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.cmp(other) < 0
