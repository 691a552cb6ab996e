"""The sandbox every evaluation runs in: namespaces, a user of its own, limits, and nothing left behind.

The harness server forks one child per job (no exec, so torch stays imported and a job starts in
milliseconds); ``enter`` turns that child into a chain of three processes:

    server (supervisor) ── A: host side, waits ── B: init of the job's PID namespace ── C: the worker

A leaves the server's session and dies with it, keeps only the result channel and the captured
stdout/stderr, and unshares mount, PID, network, IPC and UTS namespaces (plus a user namespace when the
server is not root). B, the first process of the new PID namespace, builds the job's filesystem
(``harness.isolation.rootfs``: the host's system folders read-only, a size-capped scratch /tmp with the working
directory, a fresh /proc), sets the resource limits, drops to an unprivileged user of the job's own
(root servers) or drops every capability (user namespaces), forks C and reaps. When C ends, B reports
C's exit status to A and ends; the kernel then kills every process left in the namespace, however it was
started. The network namespace has no interfaces but a loopback that is down: no network.

When the host allows no namespaces (``probe`` finds out once per server; ``KERNELRANK_SANDBOX=limits``
turns them off), the same chain runs without them: limits, the job's own user when the server is root,
a scrubbed environment and per-job caches (``harness.isolation.environment``), and the supervisor's sweep of
everything below the server (a subreaper) at the end. The result says which of the two ran
(``EvalResult.sandbox``). Either way, where the host has a writable cgroup hierarchy, the supervisor puts A
in a cgroup of its own before the job is handed over (``harness.isolation.cgroups``): the kernel then caps the job's
tasks and CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.isolation import cgroups, linux, processes, rootfs
from harness.isolation.environment import job_environment
from harness.isolation.staging import Stage
from harness.limits import Limits, set_rlimits

POLICIES = ("auto", "namespaces", "limits")  # auto: namespaces when the host allows them, else limits

JOB_UID_BASE = 1_900_000_000  # root servers run each job as a user of its own from this range
JOB_UID_RANGE = 100_000_000


class SandboxError(RuntimeError):
    """The sandbox could not be entered on this host."""


@dataclass(frozen=True)
class Capability:
    """What this host lets the harness do; ``probe`` finds out once per server."""

    isolated: bool  # namespaces and the read-only view
    root: bool  # the server runs as root
    reason: str = ""  # why not isolated
    own_user: bool = False  # each job runs as a user of its own (always, on root servers)
    cgroups: cgroups.Hierarchy | None = None  # where each job gets a group of its own (harness.isolation.cgroups)
    cgroups_reason: str = ""  # why jobs get none

    def describe(self) -> str:
        who = "a user of its own" if self.own_user else "the server's user, without capabilities"
        if self.cgroups is not None:
            group = f"; a cgroup v{self.cgroups.version} per job (the kernel caps its tasks and CPU)"
        else:
            group = f"; no cgroup per job ({self.cgroups_reason})"
        if self.isolated:
            return (
                f"PID, mount, network, IPC and UTS namespaces{'' if self.root else ' in a user namespace'}; "
                f"read-only system folders and a private /tmp; no network; {who}{group}"
            )
        return f"not isolated ({self.reason}); resource limits only, as {who}{group}"


@dataclass(frozen=True)
class Launch:
    """Everything the forked child needs to enter the sandbox of one job."""

    capability: Capability
    limits: Limits
    view: rootfs.View | None
    uid: int
    gid: int
    stage: Stage

    @classmethod
    def plan(cls, capability: Capability, limits: Limits, stage: Stage) -> Launch:
        own = JOB_UID_BASE + secrets.randbelow(JOB_UID_RANGE)
        view = rootfs.plan_view(limits.scratch_mb) if capability.isolated else None
        return cls(
            capability,
            limits,
            view,
            own if capability.own_user else os.getuid(),
            own if capability.own_user else os.getgid(),
            stage,
        )


def probe(policy: str = "auto") -> Capability:
    """Try the whole sandbox once in a throwaway child; fall back (``auto``) or raise (``namespaces``). Then
    find a cgroup hierarchy for the jobs, unless ``KERNELRANK_CGROUPS=off``."""
    capability = _isolation(policy)
    if os.environ.get(cgroups.CGROUPS_VARIABLE) == "off":
        return dataclasses.replace(capability, cgroups_reason=f"turned off by {cgroups.CGROUPS_VARIABLE}=off")
    if not (capability.isolated or capability.own_user):  # the job's user would own its group's files
        return dataclasses.replace(capability, cgroups_reason="a job would run as the user that owns its cgroup")
    found = cgroups.find()
    if isinstance(found, str):
        return dataclasses.replace(capability, cgroups_reason=found)
    return dataclasses.replace(capability, cgroups=found)


def _isolation(policy: str) -> Capability:
    if policy not in POLICIES:
        raise SandboxError(f"unknown sandbox policy {policy!r}; use one of {', '.join(POLICIES)}")
    root = os.geteuid() == 0
    _create_gpu_devices()
    if policy != "limits":
        wanted = Capability(isolated=True, root=root, own_user=root)
        if (error := _trial(wanted)) is None:
            return wanted
        if policy == "namespaces":
            raise SandboxError(f"this host cannot run the sandbox: {error}")
        reason = f"this host allows no namespaces: {error}"
    else:
        reason = "namespaces turned off by KERNELRANK_SANDBOX=limits"
    if root and not _interpreter_public():
        # root without a user of its own may write every root-owned file: refuse rather than pretend
        raise SandboxError(
            f"{reason}; and jobs cannot run as a user of their own, because other users cannot "
            "read the Python installation's folders. Allow namespaces, or make the interpreter "
            "readable by all users (chmod o+rx), or run the harness as an unprivileged user."
        )
    return Capability(isolated=False, root=root, reason=reason, own_user=root)


def enter(
    launch: Launch, channel_fd: int, stdout_fd: int, stderr_fd: int, report: Callable[[int], None] | None = None
) -> Path:
    """First steps of a freshly forked child of the server; returns only in the worker (C), with its working
    directory. A and B never return: they wait and end as C ended, and A then calls ``report`` with the
    number of the job's processes still running when the worker ended (all killed). Raises SandboxError in
    A or B."""
    _detach(channel_fd, stdout_fd, stderr_fd)
    isolated = launch.capability.isolated
    try:
        if isolated:
            _unshare(launch.capability.root)
    except OSError as exc:
        raise SandboxError(f"cannot create the job's namespaces ({exc})") from exc
    status_read, status_write = os.pipe()
    init = os.fork()
    if init:
        os.close(status_write)
        _wait_and_mirror(init, status_read, report)
    os.close(status_read)
    _die_with_parent()
    try:
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        workdir = _filesystem(launch)
        set_rlimits(launch.limits, launch.capability.own_user)
        _drop_privileges(launch)
        _die_with_parent()  # a change of user clears the parent-death signal
    except OSError as exc:
        raise SandboxError(f"cannot set up the job's sandbox ({exc})") from exc
    worker = os.fork()
    if worker:
        os.close(channel_fd)
        _init(worker, status_write)
    os.close(status_write)
    _die_with_parent()
    linux.prctl(linux.PR_SET_DUMPABLE, 1)  # the worker's own /proc/self stays its own
    job_environment(launch.stage, isolated)
    os.chdir(workdir)
    return workdir


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


# ---- the chain -------------------------------------------------------------------------------------------


def _detach(channel_fd: int, stdout_fd: int, stderr_fd: int) -> None:
    """A: own session, dies with the server, stdin empty, stdout/stderr captured, no other descriptor."""
    os.setsid()
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((devnull, 0), (stdout_fd, 1), (stderr_fd, 2)):
        os.dup2(source, target)
    os.closerange(3, channel_fd)
    os.closerange(channel_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _die_with_parent() -> None:
    parent = os.getppid()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _unshare(root: bool) -> None:
    flags = linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
    if root:
        linux.unshare(flags)
    else:
        uid, gid = os.getuid(), os.getgid()
        linux.unshare(flags | linux.CLONE_NEWUSER)
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)  # nothing propagates back to the host


def _wait_and_mirror(child: int, status_read: int, report: Callable[[int], None] | None) -> None:
    """A: wait for B, report what was left running, then end the way the worker ended."""
    _, status = os.waitpid(child, 0)
    reported = os.read(status_read, 8)
    if len(reported) == 8:
        status = int.from_bytes(reported[:4], "little")
        if report is not None:
            with contextlib.suppress(OSError):
                report(int.from_bytes(reported[4:], "little"))
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)  # a signal whose default is not to end the process
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _init(worker: int, status_write: int) -> None:
    """B: reap every process of the job until the worker ends; pass its status and the number of processes
    still running on to A, and end (with the PID namespace, the kernel then kills those)."""
    status = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == worker:
            break
    leftovers = len(processes.descendants(os.getpid()))
    os.write(status_write, status.to_bytes(4, "little") + leftovers.to_bytes(4, "little"))
    os._exit(0)


def _filesystem(launch: Launch) -> Path:
    stage = launch.stage
    if launch.view is None:
        if launch.capability.own_user:  # the job's user must reach its folders, and only those
            os.chmod(stage.root, 0o711)
            for folder in (stage.workdir, stage.scratch):
                for path in [folder, *folder.rglob("*")]:
                    os.lchown(path, launch.uid, launch.gid)
        return stage.workdir
    socket.sethostname("kernelrank-job")
    rootfs.build(launch.view, str(stage.view), stage.workdir)
    if launch.capability.root:
        rootfs.hand_over(launch.uid, launch.gid)
    return Path(rootfs.WORKDIR)


def _drop_privileges(launch: Launch) -> None:
    with contextlib.suppress(OSError):  # the server's priority is not the job's (harness.host.server_process)
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    if launch.capability.own_user:
        os.setgroups([])
        os.setresgid(launch.gid, launch.gid, launch.gid)
        os.setresuid(launch.uid, launch.uid, launch.uid)  # leaves no capability behind
    elif launch.capability.isolated:
        linux.drop_capabilities()
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)  # the job cannot trace or signal-inspect its init


def _trial(capability: Capability) -> str | None:
    """Run the sandbox's setup in a throwaway child; None when it worked, else what failed."""
    with tempfile.TemporaryDirectory(prefix="kernelrank-probe-") as folder:
        stage = Stage.empty(Path(folder))
        launch = Launch.plan(capability, Limits.for_job(1024, 10), stage)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                enter(launch, write, os.open(os.devnull, os.O_WRONLY), os.open(os.devnull, os.O_WRONLY))
                os._exit(0)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.write(write, (str(exc) or traceback.format_exc()).encode()[:4000])
                os._exit(1)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            message = pipe.read().decode(errors="replace").strip()
        _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and not message:
        return None
    return message or f"the trial sandbox ended with status {status}"


def _create_gpu_devices() -> None:
    """The NVIDIA unified-memory device appears on the first CUDA use since boot, created by the setuid
    nvidia-modprobe; a job cannot run that (no new privileges) and the view is fixed once made, so create it
    now. The server itself must not initialise CUDA (its forks could not use it)."""
    if glob.glob("/dev/nvidia[0-9]*") and not os.path.exists("/dev/nvidia-uvm"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["nvidia-modprobe", "-u", "-c", "0"], capture_output=True, timeout=30, check=False)


def _interpreter_public() -> bool:
    """Whether another user can import from this interpreter's folders (pyenv under a 0700 /root: no)."""
    for folder in {sys.prefix, sys.base_prefix, str(rootfs.HARNESS_DIR)}:
        path = Path(folder).resolve()
        if path.stat().st_mode & 0o005 != 0o005:
            return False
        if any(parent.stat().st_mode & 0o001 == 0 for parent in path.parents):
            return False
    return True
