"""elementary_cycles: every elementary cycle once, in order from its smallest member."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.checks.graph import elementary_cycles


def brute_force(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Every cycle by trying every ordering of every node subset (tiny graphs only)."""
    edge_set = set(edges)
    nodes = sorted({n for edge in edges for n in edge})
    found = []
    for size in range(1, len(nodes) + 1):
        for subset in itertools.combinations(nodes, size):
            first, rest = subset[0], subset[1:]  # combinations are sorted: first is smallest
            for order in itertools.permutations(rest):
                ring = [first, *order, first]
                if all(pair in edge_set for pair in itertools.pairwise(ring)):
                    found.append([first, *order])
    return sorted(found)


def test_acyclic_graphs_have_no_cycles() -> None:
    assert elementary_cycles([]) == []
    assert elementary_cycles([("a", "b"), ("b", "c"), ("a", "c")]) == []


def test_two_disjoint_cycles_and_one_sharing_a_node_are_each_reported_once() -> None:
    edges = [("a", "b"), ("b", "a"), ("c", "d"), ("d", "e"), ("e", "c"), ("b", "f"), ("f", "a")]
    assert elementary_cycles(edges) == [["a", "b"], ["a", "b", "f"], ["c", "d", "e"]]


def test_a_cycle_starts_at_its_smallest_member_and_keeps_its_direction() -> None:
    assert elementary_cycles([("z", "m"), ("m", "a"), ("a", "z")]) == [["a", "z", "m"]]
    assert elementary_cycles([("z", "a"), ("a", "m"), ("m", "z")]) == [["a", "m", "z"]]


def test_self_loops_are_cycles_of_one() -> None:
    assert elementary_cycles([("x", "x")]) == [["x"]]
    # A self-loop on a node of a longer cycle is a second, separate cycle.
    assert elementary_cycles([("a", "a"), ("a", "b"), ("b", "a")]) == [["a"], ["a", "b"]]


def test_edge_order_and_duplicates_do_not_change_the_result() -> None:
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a"), ("c", "b"), ("c", "c")]
    expected = elementary_cycles(edges)
    shuffled = edges * 2
    random.Random(7).shuffle(shuffled)
    assert elementary_cycles(shuffled) == expected
    assert expected == [["a", "b"], ["a", "b", "c"], ["b", "c"], ["c"]]


def test_complete_graph_has_every_cycle_once() -> None:
    nodes = [str(i) for i in range(6)]
    edges = [(a, b) for a in nodes for b in nodes if a != b]
    cycles = elementary_cycles(edges, limit=10_000)
    # sum over k >= 2 of C(6, k) * (k - 1)!
    assert len(cycles) == 15 + 40 + 90 + 144 + 120
    assert len({tuple(c) for c in cycles}) == len(cycles)


def test_limit_caps_a_dense_graph() -> None:
    nodes = [f"n{i}" for i in range(12)]  # billions of cycles: the cap must stop the search
    edges = [(a, b) for a in nodes for b in nodes]
    cycles = elementary_cycles(edges, limit=100)
    assert len(cycles) == 100
    assert len({tuple(c) for c in cycles}) == 100
    for cycle in cycles:
        assert cycle[0] == min(cycle)
        assert len(set(cycle)) == len(cycle)
    assert elementary_cycles(edges, limit=0) == []
    assert elementary_cycles([("a", "a"), ("b", "b")], limit=1) == [["a"]]


def test_a_10000_edge_chain_has_no_cycle() -> None:
    edges = [(f"n{i:05d}", f"n{i + 1:05d}") for i in range(10_000)]
    assert elementary_cycles(edges) == []


def test_a_10000_node_ring_is_one_cycle_in_order() -> None:
    names = [f"n{i:05d}" for i in range(10_000)]
    edges = list(itertools.pairwise([*names, names[0]]))
    edges.reverse()  # input order must not matter
    assert elementary_cycles(edges) == [names]


def test_a_10000_node_ring_with_a_tail_and_a_shortcut() -> None:
    names = [f"n{i:05d}" for i in range(10_000)]
    edges = [*itertools.pairwise([*names, names[0]]), ("n05000", "n00000"), ("n00000", "tail")]
    assert elementary_cycles(edges) == [names[:5001], names]


small_graphs = st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde")), max_size=14)


@settings(max_examples=200, deadline=None)
@given(small_graphs)
def test_matches_brute_force_on_small_graphs(edges: list[tuple[str, str]]) -> None:
    assert elementary_cycles(edges, limit=10_000) == brute_force(edges)
