"""A control group per job: the kernel caps its tasks and its CPU, and ends it whole.

Where the host gives the harness a writable cgroup hierarchy, ``find`` (once per server) makes a ``kernelrank``
parent group, and the supervisor puts every job's first process into a fresh child of it before the job is
handed over, so everything the submission starts is born inside. The child's ``pids.max`` makes the kernel
refuse a fork beyond the job's task limit (a fork bomb stops growing at once, and ``pids.events`` counts the
refusals the supervisor acts on); its CPU quota holds the job to its cores however many threads it runs, and
its weight makes its hundreds of processes count as that many cores against the host's other work. At the
end every process in the group is killed and the group removed.

Both layouts are supported: cgroup v2 (one unified hierarchy; the server's own group must hand the ``pids``
and ``cpu`` controllers down, which it can only do when it is the root group or holds no process) and cgroup
v1 (separate ``pids`` and ``cpu`` hierarchies). The job cannot leave its group: the files belong to root
and the job runs as a user of its own, or sees /sys read-only without the cgroup mounts (``harness.isolation.rootfs``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PARENT = "kernelrank"
CONTROLLERS = ("pids", "cpu")
CGROUPS_VARIABLE = "KERNELRANK_CGROUPS"  # "off": no cgroup per job even where the host allows them
CPU_PERIOD_US = 100_000
KILL_WAIT_S = 10.0  # a dying fork bomb of forked torch processes leaves its group within this
ORPHAN_AGE_S = 60.0  # a group left by a dead server is removed only once it is older than this
_MOUNTINFO = Path("/proc/self/mountinfo")
_OWN_GROUPS = Path("/proc/self/cgroup")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hierarchy:
    """Where this server's job groups go: one ``kernelrank`` folder (v2) or one per controller (v1)."""

    version: int
    parents: tuple[Path, ...]  # v1: the pids folder, then the cpu folder

    def create(self, tasks: int, cpu_cores: float) -> JobGroup:
        """A new, empty group for one job, with its limits set."""
        group = JobGroup(self, f"job-{os.getpid()}-{secrets.token_hex(4)}")
        for folder in group.folders:
            folder.mkdir()
        try:
            _write(group.pids / "pids.max", str(tasks))
            quota = max(1000, int(cpu_cores * CPU_PERIOD_US))  # the kernel's smallest quota is 1 ms
            # the group weighs as much as cpu_cores busy tasks against the host's others, however many it runs
            if self.version == 2:
                _write(group.cpu / "cpu.max", f"{quota} {CPU_PERIOD_US}")
                _write(group.cpu / "cpu.weight", str(min(10_000, max(1, round(100 * cpu_cores)))))
            else:
                _write(group.cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(group.cpu / "cpu.cfs_quota_us", str(quota))
                _write(group.cpu / "cpu.shares", str(max(2, round(1024 * cpu_cores))))
        except OSError:
            group.remove()
            raise
        return group

    def describe(self) -> str:
        return f"cgroup v{self.version} under {', '.join(str(p) for p in self.parents)}"


@dataclass(frozen=True)
class Counts:
    """What the kernel did to a job through its group."""

    refused_tasks: int = 0  # new processes or threads refused: pids.max reached
    throttled_periods: int = 0  # CPU periods the job was held back in, its quota used up


@dataclass(frozen=True)
class JobGroup:
    hierarchy: Hierarchy
    name: str

    @property
    def folders(self) -> tuple[Path, ...]:
        return tuple(parent / self.name for parent in self.hierarchy.parents)

    @property
    def pids(self) -> Path:
        return self.folders[0]

    @property
    def cpu(self) -> Path:
        return self.folders[-1]

    def enter(self, pid: int) -> None:
        """Move process ``pid`` (not yet running anything of the job) into the group; its children are born
        there."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", str(pid))

    def refused_forks(self) -> int:
        """How many times the kernel refused the job a new task (``pids.max`` reached)."""
        return _field(self.pids / "pids.events", "max")

    def counts(self) -> Counts:
        return Counts(self.refused_forks(), _field(self.cpu / "cpu.stat", "nr_throttled"))

    def kill(self, wait_s: float = KILL_WAIT_S) -> int:
        """SIGKILL every process in the group, then again those it forked meanwhile, until none is left or
        ``wait_s`` passed (0: one round); how many there were."""
        killed: set[int] = set()
        killer = self.pids / "cgroup.kill"  # v2, Linux 5.14: the kernel kills the whole group at once
        deadline = time.monotonic() + wait_s
        while running := self.processes():
            if not killed and killer.exists():
                _write(killer, "1")
            for pid in running - killed:  # a process killed once cannot fork again, so the rounds end
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if not killed:
                self._unthrottle()
            killed |= running
            if time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        return len(killed)

    def _unthrottle(self) -> None:
        """Lift the CPU quota and weight of a killed job: tearing down its processes is charged to the group,
        and a few hundred forked torch processes took seconds to exit at a weight of two tasks."""
        settings = (
            {"cpu.max": "max", "cpu.weight": "10000"}
            if self.hierarchy.version == 2
            else {"cpu.cfs_quota_us": "-1", "cpu.shares": "262144"}
        )
        for name, value in settings.items():
            with contextlib.suppress(OSError):
                _write(self.cpu / name, value)

    def count(self) -> int:
        """Processes in the group, read from the kernel at once (no walk of /proc)."""
        return len(self.processes())

    def processes(self) -> set[int]:
        try:
            return {int(line) for line in (self.pids / "cgroup.procs").read_text().split()}
        except FileNotFoundError:
            return set()

    def remove(self, wait_s: float = KILL_WAIT_S) -> None:
        """Remove the group once it is empty (exited processes may take a moment to leave it); a group that
        cannot be removed is logged, and the next server's start removes it."""
        deadline = time.monotonic() + wait_s
        for folder in self.folders:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        log.warning("cannot remove the job's cgroup %s: %s", folder, exc.strerror)
                        break
                    time.sleep(0.01)


def new(hierarchy: Hierarchy | None, tasks: int, cpu_cores: float) -> JobGroup | None:
    """A new, empty group with these limits; None without a hierarchy, or (logged) when it cannot be made:
    the job then runs as it would without cgroups."""
    if hierarchy is None:
        return None
    try:
        return hierarchy.create(tasks, cpu_cores)
    except OSError as exc:
        log.warning("cannot make a cgroup for the job (%s); it runs without one", exc)
        return None


def place(hierarchy: Hierarchy | None, pid: int, tasks: int, cpu_cores: float) -> JobGroup | None:
    """``new``, holding ``pid`` (a process that runs nothing of the job yet)."""
    if (group := new(hierarchy, tasks, cpu_cores)) is None:
        return None
    try:
        group.enter(pid)
    except OSError as exc:
        log.warning("cannot move the job into its cgroup (%s); it runs without one", exc)
        group.remove()
        return None
    return group


def find() -> Hierarchy | str:
    """The writable hierarchy this server puts jobs in (its parent groups created), or why there is none."""
    try:
        mounts, own = _cgroup_mounts(), _own_groups()
    except (OSError, ValueError, IndexError) as exc:  # no /proc, or a kernel that writes them otherwise (gVisor)
        return f"cannot read this process's cgroups ({exc})"
    reasons = []
    for attempt in (_unified, _separate):
        try:
            found = attempt(mounts, own)
        except OSError as exc:
            found = f"{exc.strerror or exc} ({exc.filename or 'cgroup'})"
        if isinstance(found, Hierarchy):
            try:
                found.create(1, 1.0).remove()  # a trial group: folders, limits, removal
            except OSError as exc:
                reasons.append(f"cgroup v{found.version}: cannot make a job's group ({exc.strerror or exc})")
                continue
            _remove_orphans(found)
            return found
        reasons.append(found)
    return "; ".join(reasons)


def _unified(mounts: dict[str, tuple[Path, str]], own: dict[str, str]) -> Hierarchy | str:
    if "" not in mounts or "" not in own:
        return "no cgroup v2 hierarchy"
    base = _folder(mounts[""], own[""])
    available = (base / "cgroup.controllers").read_text().split()
    if missing := [c for c in CONTROLLERS if c not in available]:
        return f"cgroup v2: the {' and '.join(missing)} controllers are not handed to {base}"
    parent = base / PARENT
    parent.mkdir(exist_ok=True)
    for folder in (base, parent):
        enabled = (folder / "cgroup.subtree_control").read_text().split()
        if wanted := [f"+{c}" for c in CONTROLLERS if c not in enabled]:
            try:
                _write(folder / "cgroup.subtree_control", " ".join(wanted))
            except OSError as exc:
                if exc.errno == errno.EBUSY:  # a non-root group that holds processes cannot hand controllers down
                    return f"cgroup v2: {folder} holds processes; give the harness a delegated group of its own"
                raise
    return Hierarchy(2, (parent,))


def _separate(mounts: dict[str, tuple[Path, str]], own: dict[str, str]) -> Hierarchy | str:
    missing = [c for c in CONTROLLERS if c not in mounts or c not in own]
    if missing:
        return f"no cgroup v1 {' or '.join(missing)} hierarchy"
    parents = tuple(_folder(mounts[c], own[c]) / PARENT for c in CONTROLLERS)
    for parent in parents:
        parent.mkdir(exist_ok=True)
    return Hierarchy(1, parents)


def _cgroup_mounts() -> dict[str, tuple[Path, str]]:
    """(mount point, group shown at it) per v1 controller, and of the v2 hierarchy under the key ""."""
    found: dict[str, tuple[Path, str]] = {}
    for line in _MOUNTINFO.read_text().splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1 :]  # filesystem type, source, super options
        mount = (Path(fields[4]), fields[3])
        if after[0] == "cgroup2":
            found.setdefault("", mount)
        elif after[0] == "cgroup":
            for option in after[2].split(","):
                found.setdefault(option, mount)
    return found


def _folder(mount: tuple[Path, str], group: str) -> Path:
    """The folder of ``group`` (a path from /proc/self/cgroup) under a mount that shows the hierarchy from
    its group ``mount[1]`` down (a container's mounts show only its own part)."""
    point, shown = mount
    relative = os.path.relpath(group, shown)
    if relative.startswith(".."):
        raise OSError(errno.ENOENT, f"this process's group {group} is not under the mount", str(point))
    return point / relative if relative != "." else point


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller, and in v2 under the key ""."""
    found = {}
    for line in _OWN_GROUPS.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _remove_orphans(hierarchy: Hierarchy) -> None:
    """Empty job groups that a killed server left behind: their server is gone, and they are not brand new (a
    server in another PID namespace may have just made one, not yet entered)."""
    for parent in hierarchy.parents:
        for folder in parent.glob("job-*"):
            server = folder.name.split("-")[1]
            old = time.time() - folder.stat().st_mtime > ORPHAN_AGE_S
            if old and server.isdigit() and not Path(f"/proc/{server}").exists():
                with contextlib.suppress(OSError):  # still holds processes: left alone
                    folder.rmdir()


def _write(path: Path, text: str) -> None:
    with open(path, "w") as file:  # one write(2): the kernel takes a cgroup file's value whole
        file.write(text)


def _field(path: Path, name: str) -> int:
    """A counter of a flat keyed file (``pids.events``, ``cpu.stat``); 0 where it cannot be read."""
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return 0
