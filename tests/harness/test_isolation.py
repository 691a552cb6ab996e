"""The submission runs in a fresh, scrubbed, private process and cannot reach the verdict's machinery."""

from __future__ import annotations

import json
import time
import types
from pathlib import Path

import pytest

from harness import FailureKind, HarnessServer, Mode, Status
from harness.channel import ChannelError, RecordReader, encode, send_record
from harness.isolation import processes
from harness.isolation.environment import scrubbed_environment
from harness.runner.guard import Guard
from harness.seeds import SeedRefused, SeedSource, public_seed, ranked_seed, run_key

SECRET_SEED = 918273645546372819


def _spy_report(result) -> dict:
    """What the spy printed; it passes, or is held for review in ranked mode (it reads /proc/self/fd)."""
    assert result.failure is None or result.failure.kind is FailureKind.HELD_FOR_REVIEW, result.failure
    return json.loads(result.stdout.splitlines()[0])


@pytest.fixture(scope="module")
def server_with_secrets_around() -> HarnessServer:
    """A server started from an environment full of things a submission must never see."""
    planted = {
        "SLACK_BOT_TOKEN": "xoxb-planted",
        "KERNELRANK_SECRET_SEED": str(SECRET_SEED),
        "AWS_SECRET_ACCESS_KEY": "planted",
        "LD_PRELOAD": "/planted.so",
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in planted.items():
            patch.setenv(key, value)
        server = HarnessServer()
        server.start()
    yield server
    server.close()


def test_the_submission_sees_no_secrets(server_with_secrets_around, make_job):
    result = server_with_secrets_around.evaluate(make_job("spy", Mode.RANKED, secret_seed=SECRET_SEED))
    report = _spy_report(result)
    seen = json.dumps(report["environ"])
    assert "planted" not in seen and "SLACK" not in seen and "LD_PRELOAD" not in seen
    assert str(SECRET_SEED) not in result.stdout + result.stderr
    assert "PATH" in report["environ"]


def test_the_submission_sees_only_the_staged_files_without_the_reference(evaluate_fixture):
    report = _spy_report(evaluate_fixture("spy"))
    assert report["files"] == ["submission.py", "task.py", "utils.py"]  # reference.py is gone once bound


def test_the_only_extra_descriptor_is_the_private_channel(evaluate_fixture):
    descriptors = _spy_report(evaluate_fixture("spy"))["fds"]
    extra = {fd: target for fd, target in descriptors.items() if int(fd) > 2}
    assert len(extra) == 1 and next(iter(extra.values())).startswith("socket:"), descriptors


def test_every_job_gets_a_fresh_process_namespace(evaluate_fixture, harness_server):
    if "not isolated" in harness_server.sandbox:
        pytest.skip(f"this host cannot sandbox: {harness_server.sandbox}")
    for _ in range(2):  # the judge under its namespace's init, the runner (the submission) under the judge,
        report = _spy_report(evaluate_fixture("spy"))  # and nothing else (of this job or another)
        assert (report["pid"], report["processes"]) == (3, [1, 2, 3])


def test_whatever_the_submission_started_is_killed(evaluate_fixture, harness_server):
    result = evaluate_fixture("spawns_child")
    assert result.status is Status.PASSED, result.failure
    assert result.sandbox.leftovers == 1
    assert processes.descendants(harness_server._process.pid, spare=harness_server.zygote) == []


def _eventually_dead(stat: Path, within_s: float = 10.0) -> bool:
    """Gone, or a zombie waiting for its reaper, within ``within_s`` (SIGKILL completes on the kernel's time)."""

    def dead() -> bool:
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    deadline = time.monotonic() + within_s
    while not dead() and time.monotonic() < deadline:
        time.sleep(0.01)
    return dead()


def test_a_forged_record_on_the_result_pipe_is_tampering(evaluate_fixture):
    result = evaluate_fixture("forge_record", Mode.RANKED)
    assert (result.status, result.failure.kind) == (Status.FAILED, FailureKind.TAMPERING)
    assert "judge's protocol" in result.failure.message  # the runner's only descriptor leads to the judge


@pytest.mark.parametrize("submission", ["patches_checker", "patches_timer", "patches_at_import"])
def test_patching_the_checker_or_the_timer_gains_nothing(evaluate_fixture, submission):
    result = evaluate_fixture(submission, Mode.BENCHMARK)
    # the runner's guard names a patch of what it can see; the checker and the reference are not there to patch
    # (importing reference.py fails) and the judge's checker, untouched, rejects what a patched one would pass
    assert result.status is not Status.PASSED, result.failure
    assert result.failure.kind in (FailureKind.TAMPERING, FailureKind.WRONG_OUTPUT, FailureKind.IMPORT_ERROR)
    assert result.score_us is None and result.shapes == []


@pytest.mark.slow
def test_a_dead_server_is_restarted_for_the_next_job(make_job):
    with HarnessServer() as server:
        server._process.kill()
        server._process.wait()
        assert server.evaluate(make_job("correct")).status is Status.PASSED


def test_environment_scrub_keeps_only_the_gpu_stack_essentials():
    kept = scrubbed_environment(
        {
            "PATH": "/bin",
            "CUDA_VISIBLE_DEVICES": "1",
            "LC_ALL": "C",
            "TRITON_CACHE_DIR": "/t",
            "GITHUB_TOKEN": "x",
            "KERNELRANK_NATS_URL": "nats://",
            "PYTHONPATH": "/evil",
        }
    )
    assert kept == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1", "LC_ALL": "C", "TRITON_CACHE_DIR": "/t"}


def test_the_guard_sees_replaced_functions_code_and_closures():
    module = types.ModuleType("watched")
    exec("def check(x):\n    return x\nclass Timer:\n    def time(self):\n        return 1\n", module.__dict__)
    factor = 2

    def scaled(x):
        return x * factor

    def shifted(x):
        return x + factor

    module.scaled, module.shifted = scaled, shifted
    guard = Guard().watch_module(module)
    assert guard.tampered() == []
    module.check = lambda x: True
    module.Timer.time = lambda self: 0
    scaled.__code__ = shifted.__code__
    shifted.__closure__[0].cell_contents = 0
    assert set(guard.tampered()) == {
        "watched.check",
        "watched.Timer.time",
        f"{__name__}.{scaled.__qualname__}",
        f"{__name__}.{shifted.__qualname__}",
    }


def test_records_survive_any_split_and_garbage_is_refused():
    stream = encode({"t": "a"}) + encode({"t": "b", "x": [1, 2]})
    reader = RecordReader()
    records = [r for i in range(len(stream)) for r in reader.feed(stream[i : i + 1])]
    assert records == [{"t": "a"}, {"t": "b", "x": [1, 2]}] and not reader.partial
    with pytest.raises(ChannelError):
        RecordReader().feed(b"\x00\x00\x00\x02[]")
    with pytest.raises(ChannelError):
        RecordReader().feed(b"\xff\xff\xff\xff")


def test_ranked_seeds_are_secret_fresh_per_call_and_per_run():
    assert public_seed(100, 2) == 126
    first, second = run_key(SECRET_SEED), run_key(SECRET_SEED)
    assert first != second and str(SECRET_SEED) not in first  # fresh entropy per run
    seeds = {ranked_seed(first, 1, call) for call in range(100)}
    assert len(seeds) == 100 and 1 not in seeds and all(0 <= s < 2**63 for s in seeds)
    assert ranked_seed(first, 1, 0) != ranked_seed(second, 1, 0)


def test_the_supervisor_hands_out_each_seed_as_often_as_the_harness_asks():
    spec = {"size": 8, "seed": 100}
    source = SeedSource([spec, spec], ranked=False)  # e.g. a shape that is a test and a benchmark too
    assert [source.answer(spec, 0), source.answer(spec, 0), source.answer(spec, 1)] == [100, 100, 113]
    for call in (0, 1):  # asking again is asking ahead of the harness
        with pytest.raises(SeedRefused):
            source.answer(spec, call)
    with pytest.raises(SeedRefused):
        source.answer({"size": 9, "seed": 100}, 0)  # a spec this evaluation never generates
    ranked = SeedSource([spec], ranked=True)
    assert not ranked.ready
    ranked.set_key(run_key(SECRET_SEED))
    assert ranked.ready and ranked.answer(spec, 0) not in (100, 113)


def test_a_caller_that_goes_away_takes_its_job_with_it(make_job):
    server = HarnessServer()
    server.start()
    send_record(server._sock, {"op": "evaluate", "job": make_job("infinite_loop").to_dict()})
    child = int(server._receive(time.monotonic() + 30)["pid"])
    server._sock.close()  # the caller vanishes mid-job without a word
    server._sock = None
    server._process.wait(30)  # the server notices, stops the child and exits
    server.close()
    assert _eventually_dead(Path(f"/proc/{child}/stat"))
