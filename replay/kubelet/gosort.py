"""Go's ``sort.Sort`` (pattern-defeating quicksort), step for step.

The kubelet ranks pods and thresholds with ``sort.Sort``, which is not stable: above 12 elements
the order of ties depends on the exact sequence of ``Less``/``Swap`` calls. Replaying evictions
byte for byte therefore needs the same algorithm, not Python's stable ``sorted``. Mirrors
go/src/sort/sort.go (``Sort``, ``xorshift``, ``nextPowerOfTwo``) and zsortinterface.go
(``pdqsort`` and helpers) as of Go 1.21+; for ≤ 12 elements this is insertion sort, which is
stable.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import Any, TypeVar

T = TypeVar("T")

_MASK64 = (1 << 64) - 1
_UNKNOWN_HINT, _INCREASING_HINT, _DECREASING_HINT = 0, 1, 2


class _Data:
    """The ``sort.Interface`` view of a mutable sequence with a ``less(a, b)`` on elements."""

    __slots__ = ("items", "less_fn")

    def __init__(self, items: MutableSequence[T], less_fn: Callable[[T, T], bool]) -> None:
        self.items = items
        self.less_fn = less_fn

    def less(self, i: int, j: int) -> bool:
        return self.less_fn(self.items[i], self.items[j])

    def swap(self, i: int, j: int) -> None:
        items = self.items
        items[i], items[j] = items[j], items[i]


class _KeyedData(_Data):
    """``Less`` as ``key(a) < key(b)`` on keys computed once, swapped along with the items."""

    __slots__ = ("keys",)

    def __init__(self, items: MutableSequence[T], keys: list[Any]) -> None:
        super().__init__(items, _unused_less)
        self.keys = keys

    def less(self, i: int, j: int) -> bool:
        keys = self.keys
        return bool(keys[i] < keys[j])

    def swap(self, i: int, j: int) -> None:
        items, keys = self.items, self.keys
        items[i], items[j] = items[j], items[i]
        keys[i], keys[j] = keys[j], keys[i]


def _unused_less(a: Any, b: Any) -> bool:  # pragma: no cover - _KeyedData compares its keys
    raise AssertionError("keyed sort")


def go_sort(items: MutableSequence[T], less: Callable[[T, T], bool]) -> None:
    """Sort ``items`` in place exactly as Go's ``sort.Sort`` would (go/src/sort/sort.go: Sort)."""
    n = len(items)
    if n <= 1:
        return
    _pdqsort(_Data(items, less), 0, n, n.bit_length())


def go_sort_by_key(items: MutableSequence[T], key: Callable[[T], Any]) -> None:
    """``go_sort(items, lambda a, b: key(a) < key(b))`` with each key computed once: the same calls of
    ``Less`` and ``Swap``, so the same order, ties included."""
    n = len(items)
    if n <= 1:
        return
    _pdqsort(_KeyedData(items, [key(item) for item in items]), 0, n, n.bit_length())


def _insertion_sort(data: _Data, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and data.less(j, j - 1):
            data.swap(j, j - 1)
            j -= 1


def _sift_down(data: _Data, lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and data.less(first + child, first + child + 1):
            child += 1
        if not data.less(first + root, first + child):
            return
        data.swap(first + root, first + child)
        root = child


def _heap_sort(data: _Data, a: int, b: int) -> None:
    first, lo, hi = a, 0, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(data, i, hi, first)
    for i in range(hi - 1, -1, -1):
        data.swap(first, first + i)
        _sift_down(data, lo, i, first)


def _pdqsort(data: _Data, a: int, b: int, limit: int) -> None:
    max_insertion = 12
    was_balanced = True
    was_partitioned = True
    while True:
        length = b - a
        if length <= max_insertion:
            _insertion_sort(data, a, b)
            return
        if limit == 0:
            _heap_sort(data, a, b)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(data, a, b)
        if hint == _DECREASING_HINT:
            _reverse_range(data, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING_HINT
        if was_balanced and was_partitioned and hint == _INCREASING_HINT and _partial_insertion_sort(data, a, b):
            return
        if a > 0 and not data.less(a - 1, pivot):
            a = _partition_equal(data, a, b, pivot)
            continue
        mid, was_partitioned = _partition(data, a, b, pivot)
        left_len, right_len = mid - a, b - mid
        balance_threshold = length // 8
        if left_len < right_len:
            was_balanced = left_len >= balance_threshold
            _pdqsort(data, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right_len >= balance_threshold
            _pdqsort(data, mid + 1, b, limit)
            b = mid


def _partition(data: _Data, a: int, b: int, pivot: int) -> tuple[int, bool]:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and data.less(i, a):
        i += 1
    while i <= j and not data.less(j, a):
        j -= 1
    if i > j:
        data.swap(j, a)
        return j, True
    data.swap(i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and data.less(i, a):
            i += 1
        while i <= j and not data.less(j, a):
            j -= 1
        if i > j:
            break
        data.swap(i, j)
        i += 1
        j -= 1
    data.swap(j, a)
    return j, False


def _partition_equal(data: _Data, a: int, b: int, pivot: int) -> int:
    data.swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not data.less(a, i):
            i += 1
        while i <= j and data.less(a, j):
            j -= 1
        if i > j:
            return i
        data.swap(i, j)
        i += 1
        j -= 1


def _partial_insertion_sort(data: _Data, a: int, b: int) -> bool:
    max_steps, shortest_shifting = 5, 50
    i = a + 1
    for _ in range(max_steps):
        while i < b and not data.less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < shortest_shifting:
            return False
        data.swap(i, i - 1)
        if i - a >= 2:
            j = i - 1
            while j >= 1:
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b:
                if not data.less(j, j - 1):
                    break
                data.swap(j, j - 1)
                j += 1
    return False


def _break_patterns(data: _Data, a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    random = length
    modulus = 1 << length.bit_length()
    for idx in range(a + (length // 4) * 2 - 1, a + (length // 4) * 2 + 2):
        random ^= (random << 13) & _MASK64
        random ^= random >> 7
        random ^= (random << 17) & _MASK64
        other = random & (modulus - 1)
        if other >= length:
            other -= length
        data.swap(idx, a + other)


def _choose_pivot(data: _Data, a: int, b: int) -> tuple[int, int]:
    shortest_ninther, max_swaps = 50, 4 * 3
    length = b - a
    swaps = [0]
    i = a + length // 4 * 1
    j = a + length // 4 * 2
    k = a + length // 4 * 3
    if length >= 8:
        if length >= shortest_ninther:
            i = _median(data, i - 1, i, i + 1, swaps)
            j = _median(data, j - 1, j, j + 1, swaps)
            k = _median(data, k - 1, k, k + 1, swaps)
        j = _median(data, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING_HINT
    if swaps[0] == max_swaps:
        return j, _DECREASING_HINT
    return j, _UNKNOWN_HINT


def _order2(data: _Data, a: int, b: int, swaps: list[int]) -> tuple[int, int]:
    if data.less(b, a):
        swaps[0] += 1
        return b, a
    return a, b


def _median(data: _Data, a: int, b: int, c: int, swaps: list[int]) -> int:
    a, b = _order2(data, a, b, swaps)
    b, c = _order2(data, b, c, swaps)
    a, b = _order2(data, a, b, swaps)
    return b


def _reverse_range(data: _Data, a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        data.swap(i, j)
        i += 1
        j -= 1
