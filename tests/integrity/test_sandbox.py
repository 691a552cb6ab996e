"""The sandbox itself: what a submission can see and do, on this host's namespaces and on the fallbacks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cases import PROBLEMS, REPO
from integrity_testkit import nothing_left

import harness.host.server
from harness import EvalJob, HarnessServer, HarnessStartError, Mode, device, limits, load_problem
from harness.channel import RecordReader
from harness.isolation import processes, sandbox, staging
from harness.isolation.staging import Stage
from harness.judge import judge_process
from harness.result import FailureKind, Status

PROBES = Path(__file__).resolve().parent / "probes"
SECRET_SEED = 918273645546372819
NOBODY = 65534


def _job(probe: str, mode: Mode = Mode.TEST, **fields: object) -> EvalJob:
    source = (PROBES / f"{probe}.py").read_text()
    for name, value in fields.pop("fill", {}).items():  # type: ignore[union-attr]
        source = source.replace(f"{name} = {{}}", f"{name} = {value!r}", 1)
    return EvalJob(
        problem=load_problem(PROBLEMS["fixture"]),
        submission_name="submission.py",
        submission_source=source,
        mode=mode,
        device="cpu",
        **fields,
    )  # type: ignore[arg-type]


def _report(result) -> dict:
    """What a probe printed; it passes, or (ranked) is held for review for reading /proc."""
    assert result.failure is None or result.failure.kind is FailureKind.HELD_FOR_REVIEW, result.failure
    return json.loads(result.stdout.splitlines()[0])


@pytest.fixture(scope="module")
def other_stage():
    """Another evaluation's folder on the host, as a submission would hunt for it."""
    folder = Path(tempfile.mkdtemp(prefix="kernelrank-"))
    (folder / "submission.py").write_text("secret = 1\n")
    yield folder
    shutil.rmtree(folder)


def _isolated(server: HarnessServer) -> None:
    if "not isolated" in server.sandbox:
        pytest.skip(f"this host cannot sandbox: {server.sandbox}")


def _writes() -> dict[str, str]:
    """Places a submission tries to write: its own, and the host's (which must refuse)."""
    import torch

    return {
        "workdir": "planted.txt",
        "tmp": "/tmp/planted.txt",
        "extension-cache": "$TORCH_EXTENSIONS_DIR/p.txt",
        "harness": str(REPO / "harness" / "planted.py"),
        "usr": "/usr/planted.txt",
        "site-packages": str(Path(torch.__file__).parents[1] / "planted.py"),
    }


def test_the_view_is_read_only_private_and_offline(harness_server, other_stage):
    _isolated(harness_server)
    watched = {
        "shadow": "/etc/shadow",
        "checkout": str(REPO / "pyproject.toml"),
        "other stage": str(other_stage / "submission.py"),
        "host tmp": str(other_stage),
    }
    report = _report(harness_server.evaluate(_job("look_around", fill={"WATCHED": watched, "WRITES": _writes()})))
    assert report["read"] == {
        "shadow": "errno 13",
        "checkout": "errno 2",
        "other stage": "errno 2",
        "host tmp": "errno 2",
    }
    assert report["write"] == {
        "workdir": "ok",
        "tmp": "ok",
        "extension-cache": "ok",
        "harness": "errno 30",
        "site-packages": "errno 30",
        "usr": "errno 30",
    }
    assert report["network"] == "errno 101"  # no interface but a loopback that is down
    # the namespace's init, the judge and the runner (where the probe runs): nothing of the host
    assert report["processes"] == [1, 2, 3] and report["hostname"] == "kernelrank-job"
    assert report["capabilities"] == "0000000000000000" and report["no_new_privs"] == "1"
    assert {"home", "var", "run", "srv", "mnt"}.isdisjoint(report["root"])
    assert report["environ"]["HOME"] == "/tmp/home" and report["environ"]["TORCH_EXTENSIONS_DIR"].startswith("/tmp/")
    if os.geteuid() == 0:
        assert report["uid"] >= sandbox.JOB_UID_BASE and report["groups"] == []
        assert report["limits"]["RLIMIT_NPROC"] == limits.MAX_TASKS
    assert report["limits"]["RLIMIT_NOFILE"] == limits.OPEN_FILES and report["limits"]["RLIMIT_CORE"] == 0


IMPORTS_FROM_HOST_TMP = """
import kernelrank_tmp_module
try:
    open(kernelrank_tmp_module.__file__ + ".planted", "w")
except OSError:
    pass
else:
    raise SystemExit("a Python folder under the host's /tmp is writable from the job")
"""


def test_a_python_folder_under_the_hosts_tmp_is_shown_read_only(monkeypatch):
    """A virtual environment (or PYTHONPATH entry) kept under /tmp must still be importable in the job."""
    folder = Path(tempfile.mkdtemp(prefix="kernelrank-test-site-"))
    folder.chmod(0o755)  # as a virtual environment's folders are: the job runs as another user
    (folder / "kernelrank_tmp_module.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    correct = REPO / "tests" / "fixtures" / "harness" / "submissions" / "correct.py"
    source = IMPORTS_FROM_HOST_TMP + correct.read_text()
    try:
        with HarnessServer() as server:
            _isolated(server)
            result = server.evaluate(
                EvalJob(
                    problem=load_problem(PROBLEMS["fixture"]),
                    submission_name="submission.py",
                    submission_source=source,
                    mode=Mode.TEST,
                    device="cpu",
                )
            )
        assert result.status is Status.PASSED, result.failure
    finally:
        shutil.rmtree(folder)


def test_build_caches_and_temporary_files_do_not_carry_over(harness_server):
    _isolated(harness_server)
    writes = {"extension-cache": "$TORCH_EXTENSIONS_DIR/p.txt"}
    first, second = (_report(harness_server.evaluate(_job("look_around", fill={"WRITES": writes}))) for _ in range(2))
    assert first["write"]["extension-cache"] == "ok" and not second["seen_before"]


def test_the_leaderboard_secret_never_reaches_the_submission(harness_server):
    secret = str(SECRET_SEED)
    needles = {"secret seed": (secret[:9], secret[9:]), "control: its own file name": ("submis", "sion.py")}
    job = _job("memory_search", Mode.RANKED, secret_seed=SECRET_SEED, fill={"NEEDLES": needles})
    assert _report(harness_server.evaluate(job)) == {
        "secret seed": False,
        "control: its own file name": True,
        "jobs holding a secret seed": 0,
    }


def test_the_run_key_is_not_in_the_memory_the_child_starts_from(harness_server, monkeypatch):
    """The key reaches the server after the fork: a run that knows its own key in advance cannot find it."""
    key = "5eed" * 16
    monkeypatch.setattr(harness.host.server, "run_key", lambda secret_seed: key)
    job = _job("memory_search", Mode.RANKED, secret_seed=SECRET_SEED, fill={"NEEDLES": {"key": (key[:32], key[32:])}})
    assert _report(harness_server.evaluate(job)) == {"key": False, "jobs holding a secret seed": 0}


def test_without_namespaces_a_root_server_runs_jobs_as_users_of_their_own_or_refuses():
    """The limits-only fallback: a user of its own for every job, limits, and the sweep; where other users
    cannot read the interpreter (pyenv under /root), a root server refuses instead of running jobs as root."""
    if os.geteuid() != 0:
        pytest.skip("needs a root server")
    server = HarnessServer(sandbox_policy="limits")
    if not sandbox._interpreter_public():
        with pytest.raises(HarnessStartError, match="readable by all users"):
            server.start()
        return
    with server:
        writes = {"workdir": "planted.txt", "site-packages": _writes()["site-packages"]}
        result = server.evaluate(_job("look_around", fill={"WRITES": writes}))
        report = _report(result)
        assert not result.sandbox.isolated and "not isolated" in result.sandbox.description
        assert report["uid"] >= sandbox.JOB_UID_BASE and report["no_new_privs"] == "1"
        assert report["write"] == {"workdir": "ok", "site-packages": "errno 13"}
        _cleaned_up_after(server)


@pytest.mark.slow
def test_without_namespaces_a_non_root_server_keeps_limits_and_cleans_up(tmp_path):
    wrapper = _as_nobody(tmp_path)
    with HarnessServer(python=str(wrapper), sandbox_policy="limits") as server:
        assert "not isolated" in server.sandbox and "KERNELRANK_SANDBOX=limits" in server.sandbox
        result = server.evaluate(_job("look_around"))
        report = _report(result)
        assert not result.sandbox.isolated and report["uid"] == NOBODY and report["no_new_privs"] == "1"
        assert report["environ"]["TORCH_EXTENSIONS_DIR"].startswith(str(Path(report["cwd"]).parent))
        _cleaned_up_after(server)


def _cleaned_up_after(server: HarnessServer) -> None:
    spawned = server.evaluate(_job_for("tests/fixtures/harness/submissions/spawns_child.py"))
    assert spawned.status is Status.PASSED and spawned.sandbox.leftovers >= 1
    assert nothing_left(server) == []


def _as_nobody(tmp_path: Path) -> Path:
    """A "python" that starts the harness server as another user, in a user namespace of its own."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare to start a server as another user")
    wrapper = tmp_path / "python-as-nobody"
    wrapper.write_text(
        f'#!/bin/sh\nexec {unshare} --user --map-user={NOBODY} --map-group={NOBODY} -- {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def _job_for(path: str) -> EvalJob:
    return EvalJob(
        problem=load_problem(PROBLEMS["fixture"]),
        submission_name="submission.py",
        submission_source=(REPO / path).read_text(),
        device="cpu",
    )


@pytest.mark.slow
def test_a_server_that_is_not_root_sandboxes_in_a_user_namespace(tmp_path):
    with HarnessServer(python=str(_as_nobody(tmp_path))) as server:
        _isolated(server)
        assert "user namespace" in server.sandbox
        # (the test's user namespace maps nobody to the host's root: it writes only where the view allows)
        writes = {"workdir": "planted.txt", "site-packages": _writes()["site-packages"], "usr": "/usr/planted.txt"}
        report = _report(server.evaluate(_job("look_around", fill={"WRITES": writes})))
    assert report["uid"] == NOBODY and report["capabilities"] == "0000000000000000"
    assert report["processes"] == [1, 2, 3] and report["network"] == "errno 101"
    assert report["write"] == {"workdir": "ok", "site-packages": "errno 30", "usr": "errno 30"}


def test_a_host_without_namespaces_falls_back_or_refuses(monkeypatch):
    monkeypatch.setattr(sandbox, "_trial", lambda capability: "unshare: [Errno 1] Operation not permitted")
    monkeypatch.setattr(sandbox, "_interpreter_public", lambda: True)
    fallback = sandbox.probe("auto")
    assert not fallback.isolated and "Operation not permitted" in fallback.reason
    assert "not isolated" in fallback.describe()
    with pytest.raises(sandbox.SandboxError, match="cannot run the sandbox"):
        sandbox.probe("namespaces")
    assert "turned off" in sandbox.probe("limits").reason


@pytest.mark.parametrize(
    "host_mb, job_mb, expected_mb", [(23_000, 16_384, 5_750), (131_072, 16_384, 16_384), (23_000, 1_024, 1_024)]
)
def test_memory_is_capped_by_the_job_and_the_host(monkeypatch, host_mb, job_mb, expected_mb):
    monkeypatch.setattr(limits, "host_memory_mb", lambda: host_mb)
    assert limits.Limits.for_job(job_mb, 30).memory_mb == expected_mb


def test_a_busy_gpu_after_the_job_is_noticed(monkeypatch):
    for answer, idle in (([], True), (["4242"], False), (None, None)):
        monkeypatch.setattr(device, "gpu_compute_processes", lambda answer=answer: answer)
        assert device.gpu_idle(wait_s=0.2) is idle


@pytest.mark.slow
def test_a_killed_server_takes_its_job_with_it():
    server = HarnessServer()
    server.start()
    seen = []
    job = _job_for("tests/fixtures/harness/submissions/infinite_loop.py")
    harness.host.server.send_record(server._sock, {"op": "evaluate", "job": job.to_dict()})
    child = int(server._receive(time.monotonic() + 30)["pid"])
    deadline = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < deadline:  # the chain: init of the namespace, worker
        seen = [p.pid for p in processes.descendants(child)]
        time.sleep(0.05)
    server_pid = server._process.pid
    os.kill(server_pid, signal.SIGKILL)
    server._process.wait()
    server.close()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() and not processes._zombie(pid) for pid in [child, *seen]):
        assert time.monotonic() < deadline, "the job outlived its server"
        time.sleep(0.05)
    left = list(Path(tempfile.gettempdir()).glob(f"kernelrank-{server_pid}-*"))
    assert left and staging.remove_orphans() >= 1 and not any(p.exists() for p in left)  # the next server's job


def test_a_sandbox_that_cannot_be_entered_is_a_harness_error(monkeypatch, tmp_path):
    """The sandbox's own processes report why it failed, before anything submitted runs."""

    def refuse(root):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(sandbox, "_unshare", refuse)
    stage = Stage.empty(tmp_path)
    launch = sandbox.Launch.plan(sandbox.Capability(isolated=True, root=False), limits.Limits.for_job(1024, 10), stage)
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        judge_process.child_main(
            _job_for("tests/fixtures/harness/submissions/correct.py"),
            launch,
            "n0nce",
            theirs.fileno(),
            os.open(os.devnull, os.O_WRONLY),
            os.open(os.devnull, os.O_WRONLY),
        )
    theirs.close()
    reader, records = RecordReader(), []
    while data := ours.recv(1 << 16):
        records += reader.feed(data)
    _, status = os.waitpid(pid, 0)
    assert [r["t"] for r in records] == ["failure", "final"], status and all(r["nonce"] == "n0nce" for r in records)
    assert records[0]["failure"]["kind"] == "harness_error"
    assert "Operation not permitted" in records[0]["failure"]["message"]
