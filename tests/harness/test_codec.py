"""The dataclass <-> JSON codec: round trips of the real contracts, and its exact rules on bad input.

The quirks tested here (only the first non-None member of a union is tried, a bool passes as an int but
not as a float, ``tuple[A, B]`` reads every item as ``A``) are the codec's documented behaviour: the
messages on the wire depend on it staying the same.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from core.contracts.messages import (
    Actor,
    Attachment,
    Command,
    CommandKind,
    Part,
    PartKind,
    Platform,
    Reply,
    ReplyTo,
    RunJob,
    RunProgress,
    RunResult,
    Tone,
)
from harness.codec import DecodeError, from_jsonable, to_jsonable
from harness.job import EvalJob
from harness.problem import Problem, Roofline
from harness.result import (
    EvalResult,
    Failure,
    FailureKind,
    Mode,
    ProfileEntry,
    Progress,
    ShapeStats,
    Status,
    SystemInfo,
)
from harness.result import TestResult as CheckResult  # renamed so pytest does not collect it


def _through_json(value: Any) -> Any:
    """What the other side of a pipe or NATS subject receives."""
    return json.loads(json.dumps(to_jsonable(value), allow_nan=False))


def _shape(n: int, samples: int) -> ShapeStats:
    return ShapeStats(
        spec={"size": 1024 * n, "seed": n},
        n=samples,
        median_us=12.5,
        mean_us=13.0,
        trimmed_mean_us=12.75,
        std_us=0.5,
        ci_low_us=12.0,
        ci_high_us=13.0,
        min_us=11.0,
        p10_us=11.5,
        p90_us=14.0,
        max_us=20.0,
        first_call_us=900.0,
        stop_reason="converged",
        achieved_gbps=812.5 if n % 2 else None,
        peak_fraction=0.25,
        flags=["noisy"],
        samples_us=[10.0 + i / 7 for i in range(samples)],
    )


def _result() -> EvalResult:
    return EvalResult(
        status=Status.FAILED,
        mode=Mode.RANKED,
        problem="vectoradd",
        tests=[CheckResult(spec={"size": 8}, passed=True), CheckResult(spec={"size": 9}, passed=False, message="off")],
        shapes=[_shape(n, 500) for n in range(5)],
        profiles=[ProfileEntry(spec={"size": 8}, table="kernel  time\nadd  1us")],
        score_us=12.5,
        failure=Failure(FailureKind.IMPLAUSIBLE_TIME, "Too fast to be true.", log_tail="tail"),
        system=SystemInfo(device="cuda", gpu_name="H100", gpu_count=1, l2_bytes=50 << 20, sm_clock_mhz=[1980, 1755]),
        stdout="out",
        stderr="err",
        wall_s=3.5,
        gpu_s=1.25,
        compile_s=0.5,
    )


def _command() -> Command:
    return Command(
        actor=Actor(Platform.DISCORD, "u1", "Ada", ["admin"]),
        reply_to=ReplyTo(Platform.DISCORD, "c1", "t1", "m1", "u1"),
        kind=CommandKind.SUBMIT,
        args={"leaderboard": "vectoradd", "gpus": ["H100", "A100"], "nested": {"n": [1, 2.5, None]}},
        attachment=Attachment("kernel.py", bytes(range(256))),
    )


# --- round trips of the real contracts ---------------------------------------------------------------


def test_eval_result_round_trips():
    result = _result()
    assert from_jsonable(EvalResult, _through_json(result)) == result
    assert EvalResult.from_json(result.to_json()) == result


def test_eval_result_encodes_enums_as_values_and_keeps_samples():
    data = to_jsonable(_result())
    assert data["status"] == "failed" and type(data["status"]) is str
    assert data["failure"] == {"kind": "implausible_time", "message": "Too fast to be true.", "log_tail": "tail"}
    assert data["shapes"][0]["samples_us"] == [10.0 + i / 7 for i in range(500)]
    assert data["shapes"][0]["achieved_gbps"] is None and data["shapes"][1]["achieved_gbps"] == 812.5
    assert data["system"]["sm_clock_mhz"] == [1980, 1755]


def test_eval_result_defaults_fill_missing_keys():
    result = from_jsonable(EvalResult, {"status": "passed", "mode": "test", "problem": "p"})
    assert result == EvalResult(status=Status.PASSED, mode=Mode.TEST, problem="p")
    assert result.system == SystemInfo() and result.shapes == [] and result.failure is None


def test_eval_job_with_problem_round_trips(problem: Problem):
    problem.task.roofline = Roofline(bytes="3*4*size", flops="size")
    job = EvalJob(
        problem=problem,
        submission_name="kernel.py",
        submission_source="def f(): ...",
        mode=Mode.BENCHMARK,
        device="cpu",
        secret_seed=7,
        run_id="r1",
        memory_limit_mb=2048,
    )
    decoded = from_jsonable(EvalJob, _through_json(job))
    assert decoded == job
    assert isinstance(decoded.problem.task.roofline, Roofline)
    assert EvalJob.from_dict(job.to_dict()) == job


def test_command_with_attachment_round_trips():
    cmd = _command()
    data = to_jsonable(cmd)
    assert data["attachment"]["content"] == base64.b64encode(bytes(range(256))).decode("ascii")
    assert data["kind"] == "submit" and data["actor"]["platform"] == "discord"
    assert from_jsonable(Command, _through_json(cmd)) == cmd


def test_reply_with_parts_round_trips():
    reply = Reply(
        reply_to=ReplyTo(Platform.SLACK, "C1"),
        title="Results",
        tone=Tone.SUCCESS,
        in_reply_to="c1",
        parts=[
            Part(PartKind.TEXT, text="**done**"),
            Part(PartKind.TABLE, headers=["gpu", "time"], rows=[["H100", "1 µs"], ["A100", "2 µs"]]),
            Part(PartKind.IMAGE, data=b"\x89PNG\r\n", filename="plot.png"),
            Part(PartKind.STATUS, text="passed", tone=Tone.SUCCESS),
        ],
        data={"submission_id": 3, "runs": ["a", "b"]},
        final=False,
        ephemeral=True,
    )
    decoded = from_jsonable(Reply, _through_json(reply))
    assert decoded == reply
    assert decoded.parts[2].data == b"\x89PNG\r\n"


def test_run_messages_round_trip(problem: Problem):
    job = EvalJob(problem=problem, submission_name="k.py", submission_source="x = 1")
    messages = [
        RunResult(run_id="r1", submission_id=4, gpu="H100", result=_result(), worker="w1", attempts=2),
        RunJob(run_id="r1", submission_id=4, leaderboard="vectoradd", gpu="H100", job=job),
        RunProgress(run_id="r1", submission_id=4, gpu="H100", progress=Progress("timing", 2, 5, "size=8")),
    ]
    for message in messages:
        assert from_jsonable(type(message), _through_json(message)) == message


# --- encoding rules -----------------------------------------------------------------------------------


@dataclass
class Leaf:
    x: int
    y: float = 0.0


@dataclass
class Tree:
    name: str
    children: list[Tree] = field(default_factory=list)
    leaf: Leaf | None = None


@dataclass
class Computed:
    a: int
    b: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.b = self.a * 2


def test_plain_values_pass_through_unchanged():
    for value in ("s", 3, 2.5, True, None):
        assert to_jsonable(value) is value
    odd = {1, 2}
    assert to_jsonable(odd) is odd  # not JSON, but the codec does not judge it
    assert to_jsonable(Leaf) is Leaf  # a dataclass class is not an instance


def test_containers_are_encoded_recursively():
    assert to_jsonable((1, Leaf(2), [Status.PASSED])) == [1, {"x": 2, "y": 0.0}, ["passed"]]
    assert to_jsonable({1: b"ab", "k": {"n": (Mode.TEST,)}}) == {"1": "YWI=", "k": {"n": ["test"]}}
    floats = [0.5, 1.5]
    assert to_jsonable(floats) == floats and to_jsonable(floats) is not floats


def test_fields_not_in_init_are_encoded_but_not_decoded():
    assert to_jsonable(Computed(3)) == {"a": 3, "b": 6}
    assert from_jsonable(Computed, {"a": 3, "b": 100}) == Computed(3)


def test_recursive_dataclass_round_trips():
    tree = Tree("root", [Tree("a", leaf=Leaf(1, 2.5)), Tree("b", [Tree("c")])])
    assert from_jsonable(Tree, _through_json(tree)) == tree


# --- decoding rules -----------------------------------------------------------------------------------


@dataclass
class Numbers:
    i: int = 0
    f: float = 0.0
    opt: float | None = None
    floats: list[float] = field(default_factory=list)
    pair: tuple[int, ...] = ()
    mixed: tuple[int, str] = (0, "")
    named: dict[str, Leaf] = field(default_factory=dict)
    anything: Any = None
    raw: bytes = b""


@dataclass
class Unions:
    int_first: int | str = 0
    str_first: str | int = ""


@dataclass
class Loose:
    items: list = field(default_factory=list)  # a bare container hint is checked as a type
    choice: Literal["a", "b"] = "a"


def test_ints_are_accepted_as_floats_and_converted():
    decoded = from_jsonable(Numbers, {"f": 2, "opt": 3, "floats": [1, 2.5, 3]})
    assert decoded.f == 2.0 and type(decoded.f) is float
    assert type(decoded.opt) is float
    assert decoded.floats == [1.0, 2.5, 3.0] and all(type(v) is float for v in decoded.floats)


def test_bool_passes_as_int_but_not_as_float():
    assert from_jsonable(Numbers, {"i": True}).i is True
    with pytest.raises(DecodeError, match="expected float, got bool"):
        from_jsonable(Numbers, {"f": True})
    with pytest.raises(DecodeError, match="expected float, got bool"):
        from_jsonable(Numbers, {"floats": [1.0, False]})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"i": 1.5}, "expected int, got float"),
        ({"i": "1"}, "expected int, got str"),
        ({"f": "1.0"}, "expected float, got str"),
        ({"floats": {"a": 1}}, "expected a list, got dict"),
        ({"floats": (1.0,)}, "expected a list, got tuple"),
        ({"named": [1]}, "expected an object, got list"),
        ({"named": {"a": "leaf"}}, "expected an object for Leaf, got str"),
        ({"named": {"a": {"x": "1"}}}, "expected int, got str"),
    ],
)
def test_type_mismatches_name_what_was_expected(data, message):
    with pytest.raises(DecodeError, match=f"^{message}$"):
        from_jsonable(Numbers, data)


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (
            Command,
            {"actor": {"platform": "myspace", "user_id": "u"}, "reply_to": {"platform": "cli"}, "kind": "submit"},
        ),
        (Attachment, {"name": "k.py", "content": "not base64!"}),
        (Attachment, {"name": "k.py", "content": 12}),
        (Leaf, {"y": 1.0}),  # a required key is missing
    ],
)
def test_unreadable_values_raise_decode_error_naming_the_class(cls, data):
    with pytest.raises(DecodeError, match=f"^cannot read {cls.__name__}: "):
        from_jsonable(cls, data)


def test_decode_error_is_a_value_error():
    with pytest.raises(ValueError):
        from_jsonable(Leaf, [])


def test_unknown_keys_are_ignored_and_missing_keys_use_defaults():
    assert from_jsonable(Leaf, {"x": 1, "z": "new field from a newer sender"}) == Leaf(1)
    assert from_jsonable(Numbers, {}) == Numbers()


def test_containers_decode_to_their_declared_types():
    decoded = from_jsonable(
        Numbers,
        {"pair": [1, 2, 3], "mixed": [1, 2], "named": {"k": {"x": 5}}, "raw": base64.b64encode(b"\x00\x01").decode()},
    )
    assert decoded.pair == (1, 2, 3)
    assert decoded.mixed == (1, 2)  # every item is read as the first type
    assert decoded.named == {"k": Leaf(5)}
    assert decoded.raw == b"\x00\x01"
    with pytest.raises(DecodeError, match="expected int, got str"):
        from_jsonable(Numbers, {"mixed": [1, "a"]})


def test_any_is_passed_through_untouched():
    payload = {"deep": [{"a": (1, 2)}], "set": {3}}
    decoded = from_jsonable(Numbers, {"anything": payload})
    assert decoded.anything is payload
    args = {"gpus": ["H100"], "n": 1.5}
    assert from_jsonable(dict[str, Any], args) == args


def test_only_the_first_member_of_a_union_is_tried():
    assert from_jsonable(Unions, {"str_first": "x", "int_first": 3}) == Unions(3, "x")
    with pytest.raises(DecodeError, match="expected int, got str"):
        from_jsonable(Unions, {"int_first": "x"})
    with pytest.raises(DecodeError, match="expected str, got int"):
        from_jsonable(Unions, {"str_first": 3})
    with pytest.raises(DecodeError, match="expected int, got NoneType"):
        from_jsonable(Unions, {"int_first": None})


def test_optional_values_accept_null():
    assert from_jsonable(Numbers, {"opt": None}).opt is None
    assert from_jsonable(float | None, None) is None
    assert from_jsonable(float | None, 4) == 4.0


def test_bare_container_hints_are_checked_as_types_and_other_hints_pass():
    assert from_jsonable(Loose, {"items": [1, "a"], "choice": "z"}) == Loose([1, "a"], "z")
    with pytest.raises(DecodeError, match="expected list, got dict"):
        from_jsonable(Loose, {"items": {}})


def test_top_level_generic_hints_decode():
    assert from_jsonable(list[Leaf], [{"x": 1}, {"x": 2, "y": 1}]) == [Leaf(1), Leaf(2, 1.0)]
    assert from_jsonable(tuple[float, ...], [1, 2]) == (1.0, 2.0)
    assert from_jsonable(Status, "error") is Status.ERROR
    assert from_jsonable(bytes, "YWI=") == b"ab"
    with pytest.raises(DecodeError, match="cannot read Status: "):
        from_jsonable(Status, "maybe")
