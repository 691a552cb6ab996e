"""Issue 25: the judge runs only its own code, and it checks what a problem promises about its output.

Code in the judge: ``c25_planted_module`` plants modules in every folder the job can write and makes the judge
import them by name (a lazily imported helper of the checker, a standard-library module, torch's compiler stack
through a dtype name). Run through every way a judge is started: the warm server, ``kernelrank eval`` (a one-shot
server) and the remote runners' entry (``harness.host.remote``, Modal and GitHub). The planted code prints a
marker wherever it runs outside the runner and would switch the judge's rules off: the marker must not appear,
and the zeros it returns must not pass.

Output contracts: identity returning its input is refused by name; the honest copy passes. Public-style problems
that write into an output buffer inside ``data`` are held by ``tests/conformance``.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from cases import CATALOGUE, PROBLEMS

from harness import EvalResult, FailureKind, HarnessServer, Mode, Problem, Status
from harness.host import remote
from runners import eval_command

(PLANTED,) = [case for case in CATALOGUE if case.name == "c25_planted_module" and not case.cuda]
(HANDED_BACK,) = [case for case in CATALOGUE if case.name == "c25_output_is_input" and not case.cuda]
MARKER = "PLANTED-" + "CODE-RAN-OUTSIDE-THE-RUNNER"


def _warm(server: HarnessServer, problems: dict[str, Problem]) -> EvalResult:
    return server.evaluate(PLANTED.job(problems))


def _kernelrank_eval(capsys: pytest.CaptureFixture[str]) -> EvalResult:
    argv = [str(PLANTED.path), "--problem", str(PROBLEMS[PLANTED.problem]), "--mode", PLANTED.mode.value]
    assert eval_command.main([*argv, "--device", "cpu", "--json"]) == 1
    return EvalResult.from_dict(json.loads(capsys.readouterr().out))


def _remote(problems: dict[str, Problem]) -> EvalResult:
    reply = remote.read_answer(json.loads(json.dumps(remote.answer(remote.payload_for(PLANTED.job(problems))))))
    assert reply.result is not None, reply.error
    return reply.result


@pytest.mark.parametrize("started_by", ["warm server", "kernelrank eval", "remote runner"])
def test_modules_the_job_planted_never_run_in_the_judge(started_by, harness_server, problem_set, capsys):
    if started_by == "warm server":
        result = _warm(harness_server, problem_set)
    elif started_by == "kernelrank eval":
        result = _kernelrank_eval(capsys)
    else:
        result = _remote(problem_set)
    assert "planted in" in result.stdout, "the attack planted nothing, so this test proves nothing"
    assert MARKER not in result.stdout, f"planted code ran in the judge: {result.stdout[-2000:]}"
    assert (why := PLANTED.judge(result)) is None, why
    assert result.status is not Status.PASSED


@pytest.mark.parametrize(
    ("may_alias", "refused"),
    [(False, True), (None, True), (True, False)],
    ids=["identity's own promise", "the public conventions", "a problem that allows it"],
)
def test_an_input_handed_back_as_the_output(may_alias, refused, harness_server, problem_set):
    """identity (``output_may_alias_input: false``) refuses its input handed back; so do the public conventions,
    since the call left it as it was; a problem that allows aliasing accepts it (its checker does)."""
    identity = problem_set["identity"]
    task = dataclasses.replace(identity.task, output_may_alias_input=may_alias)
    problems = {"identity": dataclasses.replace(identity, task=task)}
    result = harness_server.evaluate(HANDED_BACK.job(problems, mode=Mode.TEST))
    if refused:
        assert result.failure is not None and result.failure.kind is FailureKind.BAD_OUTPUT_TYPE, result.failure
        assert "output-not-input" in result.failure.message
    else:
        assert result.status is Status.PASSED, result.failure
