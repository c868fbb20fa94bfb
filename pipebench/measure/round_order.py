"""The order every interleaved measurement runs its round in (RMIT: randomised multiple interleaved trials).

A comparison measures each of its alternatives once per round, in a random order drawn afresh for
every round, so drift on the machine (a neighbour, thermal state, the page cache) hits them alike
and no alternative always follows the same one. The grid's repeats, the confirmation race, a
capacity profile's prefixes, sharding placements, a train trial's arms and diagnose's arms all take
their order from `round_order`, seeded the same way: a text naming what is measured (the
experiment's fingerprint, a configuration or trial id, ...) and the round's number. A round's order
therefore depends on nothing but those two, so a resumed run, a worker process or a later round
computes it alone and gets the same one. `random.Random` hashes a text seed with SHA-512, so the
order is the same in every process and Python (PYTHONHASHSEED does not touch it).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def round_order(items: Sequence[T], round_index: int, seed: object) -> list[T]:
    """Give `items` in the order round `round_index` measures them: shuffled by (seed, round), the same anywhere."""
    return random.Random(f"{seed}:{round_index}").sample(list(items), len(items))
