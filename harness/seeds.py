"""Seeds of the inputs a run generates: derived by the trusted supervisor, handed over one call at a time.

Every call of a shape gets its own input. Public modes (test, benchmark, profile) use the problem's seed
plus ``13 * call`` (GPU MODE's step). Ranked runs derive each call's seed with HMAC-SHA256 under a **run
key**, itself an HMAC of the leaderboard's secret seed and fresh entropy: neither the public seeds nor an
earlier run predict a ranked run's inputs, and one seed does not reveal the next (GPU MODE's Cantor pairing
is invertible: a single handed-over seed would give away the key and every later input).

Where each piece lives:

* the leaderboard's secret and the run key are made by the caller of the harness server (``run_key``, in
  ``HarnessServer``), and the key reaches the server only after the job's child is forked, so neither is in
  the memory the child starts from;
* the supervisor (``SeedSource``) answers the worker's requests for the seed of (spec, call), each call of a
  spec once (call 0 once per list the spec is in), so a submission that asks ahead of the harness is found
  out when the harness asks for the same call;
* the worker (``SeedPlan``, the object ``harness.judge.modes`` asks) requests a seed just before it generates
  that input and keeps nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections import Counter
from typing import Any

from harness.channel import Outbox, RecordReader, read_record

SEED_MODULUS = 2**63  # torch generators take a signed 64-bit seed
CALL_STEP = 13


class SeedRefused(Exception):
    """A request the harness would never make: an unknown spec, or a call handed out already."""


def run_key(secret_seed: int | None) -> str:
    """A fresh key for one ranked run: the leaderboard's secret combined with entropy drawn now."""
    return hmac.new(str(secret_seed or 0).encode(), secrets.token_bytes(32), hashlib.sha256).hexdigest()


def public_seed(seed: int, call: int) -> int:
    return seed + CALL_STEP * call


def ranked_seed(key: str, seed: int, call: int) -> int:
    digest = hmac.new(bytes.fromhex(key), str(public_seed(seed, call)).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % SEED_MODULUS


def seeded(spec: dict[str, Any]) -> bool:
    seed = spec.get("seed")
    return isinstance(seed, int) and not isinstance(seed, bool)


class SeedSource:
    """The supervisor's side: answers each (spec, call) at most as often as the harness asks for it."""

    def __init__(self, first_calls: list[dict[str, Any]], ranked: bool) -> None:
        """``first_calls``: every spec whose call 0 the mode makes, once per list it is in."""
        self._allowed = Counter(_key(spec, 0) for spec in first_calls if seeded(spec))
        self._known = {_key(spec, 0)[0] for spec in first_calls}
        self._given: Counter[tuple[str, int]] = Counter()
        self._ranked = ranked
        self._key: str | None = None

    @property
    def ready(self) -> bool:
        """False while a ranked run waits for its key."""
        return not self._ranked or self._key is not None

    def set_key(self, key: str) -> None:
        bytes.fromhex(key)  # ValueError for anything but hex
        self._key = key

    def answer(self, spec: Any, call: Any) -> int:
        if not isinstance(spec, dict) or not seeded(spec) or not isinstance(call, int) or call < 0:
            raise SeedRefused("a malformed seed request")
        key = _key(spec, call)
        if key[0] not in self._known:
            raise SeedRefused("the seed of an input this evaluation never generates")
        self._given[key] += 1
        if self._given[key] > (self._allowed[key] if call == 0 else 1):
            raise SeedRefused(f"the seed of call {call} of a shape a second time")
        if self._ranked:
            assert self._key is not None, "answer() before the run key arrived"
            return ranked_seed(self._key, spec["seed"], call)
        return public_seed(spec["seed"], call)


class SeedPlan:
    """The worker's side, used by ``harness.judge.modes`` as ``ctx.seeds.spec_for(spec, call)``: asks the supervisor."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self._reader = RecordReader()

    def spec_for(self, spec: dict[str, Any], call: int) -> dict[str, Any]:
        """The spec to generate call number ``call`` of a shape with (unchanged when it has no seed)."""
        if not seeded(spec):
            return spec
        self._outbox.send("seed", spec=spec, call=call)
        reply = read_record(self._outbox.fd, self._reader)
        return {**spec, "seed": int(reply["seed"])}


def _key(spec: dict[str, Any], call: int) -> tuple[str, int]:
    return json.dumps(spec, sort_keys=True, default=str), call
