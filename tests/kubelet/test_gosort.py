"""gosort.py: Go's sort.Sort (pdqsort) — sorts, is stable below 13 elements, deterministic above."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.kubelet.gosort import go_sort

Item = tuple[int, int]  # (key, original index)


def _by_key(a: Item, b: Item) -> bool:
    return a[0] < b[0]


def _tagged(keys: list[int]) -> list[Item]:
    return [(k, i) for i, k in enumerate(keys)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=-50, max_value=50), max_size=300))
def test_result_is_a_sorted_permutation_for_a_strict_weak_order(keys: list[int]) -> None:
    items = _tagged(keys)
    go_sort(items, _by_key)
    assert Counter(items) == Counter(_tagged(keys))
    assert [k for k, _ in items] == sorted(keys)


def _pattern(name: str, n: int) -> list[int]:
    rng = random.Random(n)
    if name == "ascending":
        return list(range(n))
    if name == "descending":
        return list(range(n, 0, -1))
    if name == "all-equal":
        return [7] * n
    if name == "sawtooth":
        return [i % 17 for i in range(n)]
    if name == "organ-pipe":
        return [*range(n // 2), *range(n // 2, 0, -1)]
    if name == "few-distinct":
        return [rng.randrange(3) for _ in range(n)]
    if name == "nearly-sorted":
        keys = list(range(n))
        for _ in range(3):
            i, j = rng.randrange(n), rng.randrange(n)
            keys[i], keys[j] = keys[j], keys[i]
        return keys
    return [rng.randrange(1000) for _ in range(n)]


@pytest.mark.parametrize("n", [13, 50, 51, 200, 2000])
@pytest.mark.parametrize(
    "pattern",
    ["ascending", "descending", "all-equal", "sawtooth", "organ-pipe", "few-distinct", "nearly-sorted", "random"],
)
def test_sorts_adversarial_patterns_through_every_pdqsort_path(pattern: str, n: int) -> None:
    keys = _pattern(pattern, n)
    items = _tagged(keys)
    go_sort(items, _by_key)
    assert [k for k, _ in items] == sorted(keys)
    assert sorted(i for _, i in items) == list(range(len(keys)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), max_size=12))
def test_twelve_or_fewer_elements_sort_stably_like_insertion_sort(keys: list[int]) -> None:
    items = _tagged(keys)
    go_sort(items, _by_key)
    assert items == sorted(_tagged(keys), key=lambda item: item[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=13, max_size=120))
def test_more_than_twelve_elements_with_ties_sort_deterministically(keys: list[int]) -> None:
    first, second = _tagged(keys), _tagged(keys)
    go_sort(first, _by_key)
    go_sort(second, _by_key)
    assert first == second
    assert [k for k, _ in first] == sorted(keys)


def test_above_twelve_elements_ties_are_not_kept_in_input_order() -> None:
    """pdqsort is unstable: with many ties some equal keys leave their input order (spec §5.1)."""
    keys = [i % 2 for i in range(64)]
    items = _tagged(keys)
    go_sort(items, _by_key)
    assert [k for k, _ in items] == sorted(keys)
    assert items != sorted(_tagged(keys), key=lambda item: item[0])


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_element_are_left_alone(n: int) -> None:
    items = _tagged(list(range(n)))
    go_sort(items, _by_key)
    assert items == _tagged(list(range(n)))


def test_sorts_in_place_through_the_given_sequence() -> None:
    items = _tagged([3, 1, 2])
    alias = items
    go_sort(items, _by_key)
    assert alias is items and [k for k, _ in items] == [1, 2, 3]
