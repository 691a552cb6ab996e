"""Signed run reports: a result or progress event counts only when signed with its run's result key.

The core derives each run's key from its own secret (``run_key``: HMAC-SHA256 of the run id) and each
delivery's from that (``attempt_key``), and puts the delivery's key in the ``RunJob`` it grants to one worker
(``core.service.dispatch``). Only the core reads the job queue (``core.contracts.roles``), so the worker that
holds that attempt can sign for it, and nobody else can: not an adapter, not the API process, not another
worker of the pool, not a worker that held an earlier attempt. The core recomputes the keys from the run id
and the attempt, so it keeps no table of keys, and a restarted core still verifies what was signed before it
stopped.

Each worker also holds a key of its own (``worker_key``: HMAC-SHA256 of its name, handed over with its bus
credentials by ``kernelrank workers add`` or ``kernelrank up``). A worker that has one signs with
``report_key(run key, worker key)``, so a report counts only from a worker that was handed the run *and* is
the worker it names; the core derives both keys again. On an open bus (development, tests) workers have no
key and sign with the run key alone.

A signature covers the whole message but its own field, in the form the core will decode it into: the
signer signs ``decode(encode(message))``, so a value the codec normalises (an int in a float field)
cannot make a genuine signature fail.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from typing import TypeVar

from core.contracts.messages import RunProgress, RunResult, decode, encode

Signed = TypeVar("Signed", RunResult, RunProgress)


def run_key(secret: bytes, run_id: str) -> str:
    """The key a run's reports are signed with; knowing one run's key tells nothing about another's."""
    return hmac.new(secret, b"kernelrank-run-result:" + run_id.encode(), hashlib.sha256).hexdigest()


def attempt_key(run_key_: str, attempt: int) -> str:
    """The key of one delivery (attempt) of a run: what the core hands the one worker it granted that attempt, so
    the attempt a report names is bound to its key, never the worker's own word."""
    return hmac.new(run_key_.encode(), b"kernelrank-attempt:%d" % attempt, hashlib.sha256).hexdigest()


def grant(secret: bytes, worker: str, run_id: str, attempt: int, ack: str) -> str:
    """The core's token for "``worker`` holds attempt ``attempt`` of ``run_id``, JetStream delivery ``ack``": the
    worker shows it to have the core acknowledge, give back or extend that delivery, and nothing else
    (``core.service.dispatch``)."""
    body = f"kernelrank-grant:{worker}\n{run_id}\n{attempt}\n{ack}".encode()
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def worker_key(secret: bytes, name: str) -> str:
    """The key only the worker called ``name`` (and the core) can sign with."""
    return hmac.new(secret, b"kernelrank-worker:" + name.encode(), hashlib.sha256).hexdigest()


def report_key(run_key_: str, worker_key_: str) -> str:
    """What a worker signs one run's reports with: both keys bound together (the run key alone without a worker key)."""
    if not worker_key_:
        return run_key_
    return hmac.new(worker_key_.encode(), b"kernelrank-report:" + run_key_.encode(), hashlib.sha256).hexdigest()


def sign(message: Signed, key: str) -> Signed:
    """``message`` with its ``signature`` set."""
    normal = decode(type(message), encode(dataclasses.replace(message, signature="")))
    return dataclasses.replace(message, signature=_mac(key, normal))


def verify(message: RunResult | RunProgress, key: str) -> bool:
    """Whether ``message`` (as decoded from the wire) was signed with ``key``."""
    return bool(message.signature) and hmac.compare_digest(message.signature, _mac(key, message))


def _mac(key: str, message: RunResult | RunProgress) -> str:
    body = encode(dataclasses.replace(message, signature=""))
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
