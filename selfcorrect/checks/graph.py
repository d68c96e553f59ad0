"""Elementary cycles of a small directed graph (rules §14, circular delegation).

Pure and iterative throughout: delegation graphs come from untrusted files, so a 10,000-node
chain or ring must not hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

Adjacency = Mapping[str, Sequence[str]]


def elementary_cycles(edges: Iterable[tuple[str, str]], limit: int = 100) -> list[list[str]]:
    """Every elementary cycle of the directed graph `edges`, each exactly once.

    A cycle is listed as its members in order, starting from its smallest member (so
    `a -> b -> c -> a` is `["a", "b", "c"]`); a self-loop is `[a]`. The list is sorted, and the
    result does not depend on the order (or repetition) of `edges`.

    Johnson's algorithm, over strongly connected components found by Tarjan's algorithm, both
    without recursion. A dense graph can have exponentially many cycles, so at most `limit`
    cycles are reported: the search stops there, and a truncated result is not the full set.
    """
    if limit <= 0:
        return []
    targets: dict[str, set[str]] = {}
    for source, target in edges:
        targets.setdefault(source, set()).add(target)
        targets.setdefault(target, set())
    # Self-loops are cycles of their own; Johnson's search below only sees the other edges.
    cycles = [[node] for node in sorted(targets) if node in targets[node]][:limit]
    succ = {node: sorted(t for t in out if t != node) for node, out in targets.items()}
    pending = _nontrivial(_components(succ, set(succ)))
    while pending and len(cycles) < limit:
        component = pending.pop()
        start = min(component)  # every cycle through it within the component has it as minimum
        members = set(component)
        sub = {node: [t for t in succ[node] if t in members] for node in component}
        for cycle in _circuits(start, sub):
            cycles.append(cycle)
            if len(cycles) >= limit:
                break
        members.discard(start)  # all cycles through `start` are found: look at the rest
        pending.extend(_nontrivial(_components(sub, members)))
    return sorted(cycles)


def _nontrivial(components: list[list[str]]) -> list[list[str]]:
    # A one-node component holds no cycle once self-loops are set aside. Sorted, so that the
    # search order (and a truncated result) is deterministic.
    return sorted((sorted(c) for c in components if len(c) > 1), reverse=True)


def _components(succ: Adjacency, within: set[str]) -> list[list[str]]:
    """Tarjan's strongly connected components of the subgraph induced by `within`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> Iterator[str]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return iter([t for t in succ.get(node, ()) if t in within])

    for root in sorted(within):
        if root in index:
            continue
        work = [(root, visit(root))]
        while work:
            node, neighbours = work[-1]
            for nbr in neighbours:
                if nbr not in index:
                    work.append((nbr, visit(nbr)))
                    break
                if nbr in on_stack:
                    low[node] = min(low[node], index[nbr])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def _circuits(start: str, succ: Adjacency) -> Iterator[list[str]]:
    """Johnson's CIRCUIT: every elementary cycle through `start` within one component."""
    path = [start]
    blocked = {start}
    # blocked_by[n]: nodes to unblock when n is unblocked (Johnson's B lists).
    blocked_by: dict[str, set[str]] = {}
    closed = [False]  # per path frame: did a cycle close below it?
    work = [(start, iter(succ[start]))]
    while work:
        node, neighbours = work[-1]
        for nbr in neighbours:
            if nbr == start:
                yield list(path)
                closed[-1] = True
            elif nbr not in blocked:
                path.append(nbr)
                closed.append(False)
                blocked.add(nbr)
                work.append((nbr, iter(succ[nbr])))
                break
        else:
            work.pop()
            path.pop()
            if closed.pop():
                if closed:
                    closed[-1] = True
                _unblock(node, blocked, blocked_by)
            else:
                for nbr in succ[node]:
                    blocked_by.setdefault(nbr, set()).add(node)


def _unblock(node: str, blocked: set[str], blocked_by: dict[str, set[str]]) -> None:
    todo = {node}
    while todo:
        current = todo.pop()
        if current in blocked:
            blocked.discard(current)
            todo.update(blocked_by.pop(current, ()))
