"""Chains of references among objects (docs/reduction.md, References and order): where each
object comes so that it comes after the objects it names."""

from __future__ import annotations

import numpy as np


def chain_depths(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each of ``len(rank)`` objects' depth in the chains of references, where object
    ``source[i]`` names object ``target[i]``: 0 for one that names none, else one more than
    the deepest it names. Where the references make a cycle, its object of the lowest
    ``rank`` is taken as if it named none of those not placed yet (chain_breaks)."""
    return _chains(source, target, rank)[0]


def chain_breaks(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The references (indices into ``source`` and ``target``) that chain_depths takes as
    not made where it breaks a cycle: each names an object placed after the one holding it."""
    return _chains(source, target, rank)[1]


def _chains(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chain_depths, chain_breaks). Only the objects of the references are held in Python."""
    count = len(rank)
    depth = np.zeros(count, np.int64)
    edges = np.flatnonzero(source != target)
    source, target = source[edges], target[edges]
    broken: list[int] = []
    if not len(source):
        return depth, np.array(broken, np.int64)
    # Each object waits for the objects it names; each one, once placed, frees those that
    # name it (by target, their sources).
    waiting = np.bincount(source, minlength=count)
    by_target = np.argsort(target, kind="stable")
    starts = np.searchsorted(target[by_target], np.arange(count + 1))
    namers = source[by_target]
    by_source = np.argsort(source, kind="stable")
    source_starts = np.searchsorted(source[by_source], np.arange(count + 1))
    names = target[by_source]
    named = np.unique(target)
    ready = named[waiting[named] == 0].tolist()
    # The objects that wait, by rank: once every ready one is placed, the first still
    # waiting is the lowest-ranked left, and a placed one never waits again.
    namers_by_rank = np.unique(source)
    namers_by_rank = namers_by_rank[np.argsort(rank[namers_by_rank], kind="stable")]
    next_namer = 0
    while True:
        if not ready:  # a cycle: its lowest-ranked object goes first, without what it waits for
            while next_namer < len(namers_by_rank) and waiting[namers_by_rank[next_namer]] <= 0:
                next_namer += 1
            if next_namer == len(namers_by_rank):
                break
            first = _in_cycle(int(namers_by_rank[next_namer]), names, source_starts, waiting, rank)
            mine = np.arange(source_starts[first], source_starts[first + 1])
            broken += edges[by_source[mine[waiting[names[mine]] > 0]]].tolist()
            waiting[first] = 0
            ready.append(first)
        node = ready.pop()
        for namer in namers[starts[node]:starts[node + 1]].tolist():
            if waiting[namer] <= 0:
                continue  # placed already: a cycle was broken at it
            depth[namer] = max(depth[namer], depth[node] + 1)
            waiting[namer] -= 1
            if waiting[namer] == 0:
                ready.append(namer)
    return depth, np.array(sorted(broken), np.int64)


def _in_cycle(start: int, names: np.ndarray, starts: np.ndarray, waiting: np.ndarray, rank: np.ndarray) -> int:
    """The lowest-ranked object of the cycle reached from ``start`` (an object still
    waiting) by following what each names among the objects still waiting: ``start`` may
    only wait for a cycle without being in one."""
    path, seen = [start], {start: 0}
    while True:
        node = next(n for n in names[starts[path[-1]]:starts[path[-1] + 1]].tolist() if waiting[n] > 0)
        if node in seen:
            return min(path[seen[node]:], key=lambda n: rank[n])
        seen[node] = len(path)
        path.append(node)


def chain_order(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The objects' indices in order of depth (chain_depths), then of ``rank``."""
    return np.lexsort((rank, chain_depths(source, target, rank)))
