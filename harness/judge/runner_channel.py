"""The judge's side of the conversation with its runner: requests, the answers it waits for, and what else may come.

Anything unexpected from the runner ends the evaluation with a named failure (``tampering``); its death is a crash.
While the judge waits, the runner may ask for an extension build (relayed to the supervisor, the answer sent back)
and report that it compiles; nothing else.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from harness import transport
from harness.channel import Outbox, RecordReader, read_record
from harness.failures import Verdict, process_ended
from harness.judge.runner_claims import reported_failure
from harness.result import FailureKind


class RunnerChannel:
    def __init__(self, pid: int, link: transport.Link, outbox: Outbox) -> None:
        self.pid = pid
        self.link = link
        self.outbox = outbox

    def _ask(self, request: dict[str, Any], answer: str) -> tuple[dict[str, Any], list[bytearray]]:
        self.link.send(request)
        return self._receive(answer, "the evaluation")

    def _receive(self, wanted: str, during: str) -> tuple[dict[str, Any], list[bytearray]]:
        """The runner's answer ``wanted``, relaying its build requests and progress on the way."""
        while True:
            try:
                record, blobs = self.link.receive()
            except EOFError:
                raise self._ended(during) from None
            except transport.TransportError as exc:
                raise self._tampering(str(exc)) from None
            kind = record.get("t")
            if kind == wanted:
                return record, blobs
            if kind == "failure":
                raise reported_failure(record.get("failure"))
            if kind == "build" and isinstance(record.get("arguments"), dict):
                self.outbox.send("build", arguments=record["arguments"])
                self.link.send(read_record(self.outbox.fd, RecordReader()))
            elif kind == "progress" and record.get("stage") == "compiling":
                self.outbox.progress("compiling")
            else:
                raise self._tampering(f"it sent a {str(kind)[:40]!r} message while the judge waited for {wanted!r}")

    def _ended(self, during: str) -> Verdict:
        status = 0
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
        failure = process_ended(status, f"during {during}")
        return Verdict(failure.kind, failure.message)

    def _tampering(self, what: str) -> Verdict:
        return Verdict(
            FailureKind.TAMPERING,
            f"The submission's process broke the judge's protocol: {what}. Only "
            "the harness talks on that channel; a submission may only compute its output.",
        )
