"""A cgroup per job (harness/isolation/cgroups.py): the kernel refuses a job's tasks beyond its limit, holds it to
its CPU quota, the job cannot leave its group, and nothing of the group stays behind. Skipped where this host gives
the harness no writable cgroup hierarchy; the discovery's parsing is tested everywhere."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cases import PROBLEMS, REPO
from integrity_testkit import nothing_left

from harness import EvalJob, EvalResult, FailureKind, HarnessServer, Mode, Status, limits, load_problem
from harness.isolation import cgroups, sandbox

JOB_CPUS = 0.5  # the quota the server of these tests gives each job: one busy thread already exceeds it

# Forks a few copies of itself, and every copy starts threads without end, trying again when refused: the
# job reaches its task limit (processes and threads) long before its process limit.
TASK_BOMB = """import os
import threading
import time


def custom_kernel(data):
    for _ in range(4):
        try:
            os.fork()
        except OSError:
            pass
    while True:
        try:
            threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        except RuntimeError:  # the kernel refused the thread: try again
            pass
"""
# Four threads multiply matrices for a second (torch releases the GIL): two cores' worth of work or more.
CPU_BURN = """import threading
import time

import torch


def _burn():
    m = torch.ones(256, 256)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        torch.mm(m, m)


def custom_kernel(data):
    a, b, out = data
    if not getattr(custom_kernel, "burned", False):
        custom_kernel.burned = True
        threads = [threading.Thread(target=_burn) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return torch.add(a, b, out=out)
"""
# Tries to move itself out of its group, to the parent and to the root group of each hierarchy it can name.
LEAVE_GROUP = """import json
import os

import torch


def custom_kernel(data):
    a, b, out = data
    if not getattr(custom_kernel, "tried", False):
        custom_kernel.tried = True
        tried = {}
        for line in open("/proc/self/cgroup").read().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers in ("pids", "cpu,cpuacct", "cpu") else []:
                for folder in ("/sys/fs/cgroup/" + name + os.path.dirname(path), "/sys/fs/cgroup/" + name):
                    try:
                        with open(folder + "/cgroup.procs", "w") as procs:
                            procs.write(str(os.getpid()))
                        tried[folder] = "ok"
                    except OSError as exc:
                        tried[folder] = f"errno {exc.errno}"
        if os.path.exists("/sys/fs/cgroup/cgroup.procs"):
            try:
                with open("/sys/fs/cgroup/cgroup.procs", "w") as procs:
                    procs.write(str(os.getpid()))
                tried["/sys/fs/cgroup"] = "ok"
            except OSError as exc:
                tried["/sys/fs/cgroup"] = f"errno {exc.errno}"
        tried["cgroup"] = open("/proc/self/cgroup").read()
        print(json.dumps(tried))
    return torch.add(a, b, out=out)
"""


@pytest.fixture(scope="module")
def hierarchy() -> cgroups.Hierarchy:
    found = cgroups.find()
    if isinstance(found, str):
        pytest.skip(f"no writable cgroup hierarchy here: {found}")
    return found


@pytest.fixture(scope="module", params=["auto", "limits"])
def server(request: pytest.FixtureRequest, hierarchy: cgroups.Hierarchy) -> Iterator[HarnessServer]:
    """A server with namespaces (where the host allows them), and one without: a user of its own per job."""
    if request.param == "limits" and (os.geteuid() != 0 or not sandbox._interpreter_public()):
        pytest.skip("without namespaces, only a root server whose interpreter all users can read runs jobs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(limits.CPUS_VARIABLE, str(JOB_CPUS))
        patch.delenv("KERNELRANK_CGROUPS", raising=False)
        with HarnessServer(sandbox_policy=request.param) as started:
            assert f"a cgroup v{hierarchy.version} per job" in started.sandbox, started.sandbox
            yield started


def _run(server: HarnessServer, source: str) -> EvalResult:
    job = EvalJob(
        problem=load_problem(PROBLEMS["fixture"]),
        submission_name="submission.py",
        submission_source=source,
        mode=Mode.TEST,
        device="cpu",
    )
    return server.evaluate(job)


def _groups_of(server: HarnessServer, hierarchy: cgroups.Hierarchy) -> list[Path]:
    assert server._process is not None
    return [g for parent in hierarchy.parents for g in parent.glob(f"job-{server._process.pid}-*")]


def test_the_kernel_refuses_tasks_beyond_the_limit_and_the_job_is_stopped(server, hierarchy):
    result = _run(server, TASK_BOMB)
    assert result.status is not Status.PASSED and result.failure is not None
    assert result.failure.kind is FailureKind.RESOURCE_LIMIT, result.failure
    assert "the kernel refused" in result.failure.message, result.failure.message
    assert result.sandbox is not None and result.sandbox.refused_tasks > 0  # pids.events
    assert nothing_left(server) == [] and _groups_of(server, hierarchy) == []


def test_a_job_is_held_to_its_cpu_quota(server, hierarchy):
    result = _run(server, CPU_BURN)
    assert result.passed, result.failure
    assert result.sandbox is not None and result.sandbox.throttled_periods > 0
    assert result.sandbox.refused_tasks == 0
    assert _groups_of(server, hierarchy) == []


@pytest.mark.slow
def test_a_problem_with_its_own_evaluator_runs_in_a_group_too(server, hierarchy):
    problem = load_problem(REPO / "tests" / "fixtures" / "author_eval" / "crossentropy")
    solution = (REPO / "tests" / "fixtures" / "author_eval" / "solutions" / "correct.py").read_text()
    burning = (
        CPU_BURN.split("\n\n\ndef custom_kernel")[0]
        + "\n\n\n"
        + solution.replace("def forward(logits, targets):\n", "def forward(logits, targets):\n    _burn()\n", 1)
    )
    job = EvalJob(problem=problem, submission_name="submission.py", submission_source=burning, mode=Mode.TEST)
    result = server.evaluate(job)
    assert result.passed, result.failure
    assert result.sandbox is not None and result.sandbox.throttled_periods > 0
    assert _groups_of(server, hierarchy) == []


def test_a_job_cannot_leave_its_group(server, hierarchy):
    result = _run(server, LEAVE_GROUP)
    assert result.passed, result.failure
    tried = json.loads(result.stdout.strip().splitlines()[-1])
    in_group = tried.pop("cgroup")
    assert "ok" not in tried.values(), tried
    print(tried)
    assert "/kernelrank/job-" in in_group, in_group  # it ran in its group
    assert _groups_of(server, hierarchy) == []


def test_a_killed_servers_empty_groups_are_removed_by_the_next(hierarchy):
    dead_server = 99_999_999  # above any pid_max: no such process
    parent = hierarchy.parents[0]
    old, new = parent / f"job-{dead_server}-old", parent / f"job-{dead_server}-new"
    for folder in (old, new):
        folder.mkdir()
    try:
        long_ago = time.time() - 2 * cgroups.ORPHAN_AGE_S
        os.utime(old, (long_ago, long_ago))
        assert isinstance(cgroups.find(), cgroups.Hierarchy)
        assert not old.exists()
        assert new.exists()  # maybe just made by a server this one cannot see
    finally:
        for folder in (old, new):
            with contextlib.suppress(FileNotFoundError):
                folder.rmdir()


def test_on_cgroup_v2_a_group_is_killed_whole_at_once():
    """``cgroup.kill`` on a real v2 hierarchy (a hybrid host's unified mount does, without controllers)."""
    mounts, own = cgroups._cgroup_mounts(), cgroups._own_groups()
    if "" not in mounts or "" not in own:
        pytest.skip("no cgroup v2 hierarchy here")
    parent = cgroups._folder(mounts[""], own[""]) / "kernelrank-test"
    group = cgroups.JobGroup(cgroups.Hierarchy(2, (parent,)), f"job-{os.getpid()}-kill")
    try:
        group.pids.mkdir(parents=True)
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup v2 group here: {exc}")
    try:
        if not (group.pids / "cgroup.kill").exists():
            pytest.skip("no cgroup.kill (Linux before 5.14)")
        ready, go = os.pipe()
        pid = os.fork()
        if pid == 0:  # once in the group, fork 8 sleepers, then sleep too
            os.read(ready, 1)
            for _ in range(8):
                if os.fork() == 0:
                    break
            time.sleep(600)
            os._exit(0)
        group.enter(pid)
        os.write(go, b"1")
        os.close(ready)
        os.close(go)
        deadline = time.monotonic() + 30
        while group.count() < 9 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group.count() == 9
        assert group.kill() >= 9
        os.waitpid(pid, 0)
        assert group.processes() == set()
    finally:
        group.remove()
        parent.rmdir()
    assert not group.pids.exists()


MOUNTINFO = {
    "v1": """25 19 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
31 25 0:28 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
""",
    "v2": "26 19 0:23 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
    "container": "40 30 0:28 /docker/abc /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids\n",
}


@pytest.mark.parametrize(
    "layout, groups, controller, expected",
    [
        ("v1", "2:cpu,cpuacct:/\n8:pids:/user.slice\n", "cpu", "/sys/fs/cgroup/cpu,cpuacct"),
        ("v1", "2:cpu,cpuacct:/\n8:pids:/user.slice\n", "pids", "/sys/fs/cgroup/pids/user.slice"),
        ("v2", "0::/system.slice/kernelrank.service\n", "", "/sys/fs/cgroup/system.slice/kernelrank.service"),
        ("container", "8:pids:/docker/abc\n", "pids", "/sys/fs/cgroup/pids"),
    ],
)
def test_each_layout_finds_this_process_group_folder(monkeypatch, tmp_path, layout, groups, controller, expected):
    (tmp_path / "mountinfo").write_text(MOUNTINFO[layout])
    (tmp_path / "cgroup").write_text(groups)
    monkeypatch.setattr(cgroups, "_MOUNTINFO", tmp_path / "mountinfo")
    monkeypatch.setattr(cgroups, "_OWN_GROUPS", tmp_path / "cgroup")
    mounts, own = cgroups._cgroup_mounts(), cgroups._own_groups()
    assert cgroups._folder(mounts[controller], own[controller]) == Path(expected)


def _v2_tree(root: Path, controllers: str) -> tuple[dict[str, tuple[Path, str]], dict[str, str]]:
    """A cgroup v2 hierarchy's files as plain files: the server in /harness.service."""
    base = root / "harness.service"
    (base / cgroups.PARENT).mkdir(parents=True)
    (base / "cgroup.controllers").write_text(controllers)
    for folder in (base, base / cgroups.PARENT):
        (folder / "cgroup.subtree_control").write_text("")
    return {"": (root, "/")}, {"": "/harness.service"}


def test_cgroup_v2_hands_the_controllers_down_to_the_job_groups(tmp_path):
    mounts, own = _v2_tree(tmp_path, "cpuset cpu io memory pids")
    found = cgroups._unified(mounts, own)
    assert found == cgroups.Hierarchy(2, (tmp_path / "harness.service" / cgroups.PARENT,))
    for folder in (tmp_path / "harness.service", *found.parents):
        assert (folder / "cgroup.subtree_control").read_text() == "+pids +cpu"


def test_cgroup_v2_says_why_it_cannot_be_used(tmp_path, monkeypatch):
    mounts, own = _v2_tree(tmp_path, "memory io")
    assert "pids and cpu controllers are not handed" in cgroups._unified(mounts, own)
    (tmp_path / "harness.service" / "cgroup.controllers").write_text("cpu pids")

    def busy(path: Path, text: str) -> None:  # what the kernel answers a group that holds processes
        raise OSError(errno.EBUSY, "Device or resource busy", str(path))

    monkeypatch.setattr(cgroups, "_write", busy)
    assert "holds processes" in cgroups._unified(mounts, own)


def test_a_group_outside_the_mount_is_not_used():
    with pytest.raises(OSError):
        cgroups._folder((Path("/sys/fs/cgroup/pids"), "/docker/abc"), "/docker/other")


def test_the_operator_caps_the_cores_of_a_job(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv(limits.CPUS_VARIABLE, "0.5")
    assert limits.Limits.for_job(1024, 10).cpu_cores == 0.5
    monkeypatch.setenv(limits.CPUS_VARIABLE, str(cores + 8))  # never more than the server has
    assert limits.Limits.for_job(1024, 10).cpu_cores == cores
    monkeypatch.delenv(limits.CPUS_VARIABLE)
    assert limits.Limits.for_job(1024, 10).cpu_cores == cores
