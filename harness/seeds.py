"""Seeds of the inputs a run generates: public ones for test/benchmark, secret-combined ones for ranked.

Every call of a shape gets its own seed (``public + 13 * call``, GPU MODE's step), so no input repeats
within a run. In ranked mode each is Cantor-paired with a run secret: the job's secret seed combined
with fresh system entropy, so neither the public seeds nor an earlier run's inputs predict this run's.
"""

from __future__ import annotations

import random
from typing import Any

SEED_MODULUS = 2**63        # torch generators take a signed 64-bit seed
CALL_STEP = 13


def cantor(a: int, b: int) -> int:
    """Cantor pairing ``a + (a + b)(a + b + 1) / 2`` of two non-negative ints, reduced mod 2**63."""
    a, b = a % SEED_MODULUS, b % SEED_MODULUS
    return (a + (a + b) * (a + b + 1) // 2) % SEED_MODULUS


class SeedPlan:
    def __init__(self, secret: int | None) -> None:
        self._secret = secret

    @classmethod
    def public(cls) -> SeedPlan:
        return cls(None)

    @classmethod
    def ranked(cls, secret_seed: int | None) -> SeedPlan:
        entropy = random.SystemRandom().getrandbits(62)
        return cls(cantor(secret_seed or 0, entropy))

    def spec_for(self, spec: dict[str, Any], call: int) -> dict[str, Any]:
        """The spec to generate call number ``call`` of a shape with (unchanged when it has no seed)."""
        seed = spec.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            return spec
        seed += CALL_STEP * call
        return {**spec, "seed": seed if self._secret is None else cantor(self._secret, seed)}
