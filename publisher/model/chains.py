"""Chains of references among objects (docs/reduction.md, References and order): where each
object comes so that it comes after the objects it names."""

from __future__ import annotations

import numpy as np


def chain_depths(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each of ``len(rank)`` objects' depth in the chains of references, where object
    ``source[i]`` names object ``target[i]``: 0 for one that names none, else one more than
    the deepest it names. Where the references make a cycle, the object of the lowest
    ``rank`` left in it is taken as if it named none of those left. Only the objects of
    the references are held in Python."""
    count = len(rank)
    depth = np.zeros(count, np.int64)
    kept = source != target
    source, target = source[kept], target[kept]
    if not len(source):
        return depth
    # Each object waits for the objects it names; each one, once placed, frees those that
    # name it (by target, their sources).
    waiting = np.bincount(source, minlength=count)
    by_target = np.argsort(target, kind="stable")
    starts = np.searchsorted(target[by_target], np.arange(count + 1))
    namers = source[by_target]
    named = np.unique(target)
    ready = named[waiting[named] == 0].tolist()
    left = set(np.unique(source).tolist())
    while ready or left:
        if not ready:  # a cycle: its lowest-ranked object goes first
            first = min(left, key=lambda n: rank[n])
            waiting[first] = 0
            ready.append(first)
        node = ready.pop()
        left.discard(node)
        for namer in namers[starts[node]:starts[node + 1]].tolist():
            if waiting[namer] <= 0:
                continue  # placed already: a cycle was broken at it
            depth[namer] = max(depth[namer], depth[node] + 1)
            waiting[namer] -= 1
            if waiting[namer] == 0:
                ready.append(namer)
    return depth


def chain_order(source: np.ndarray, target: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The objects' indices in order of depth (chain_depths), then of ``rank``."""
    return np.lexsort((rank, chain_depths(source, target, rank)))
