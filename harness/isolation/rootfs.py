"""The filesystem a sandboxed evaluation sees: the host's system folders read-only, one size-capped scratch.

Built inside a fresh mount namespace by the sandbox's init process, then made the process's root with
``pivot_root``, so the host's own root is not reachable at all afterwards:

    /usr /etc /opt /bin ... and Python's folders   the host's, bound read-only (mounts below them too)
    <package>/harness                               read-only: the harness imports its own modules lazily
    /dev                                            null, zero, full, random, urandom, the NVIDIA devices
    /dev/shm, /tmp                                  fresh tmpfs, size-capped; /tmp holds the working
                                                    directory, HOME and the per-job build caches (and,
                                                    read-only, Python's folders kept under the host's /tmp)
    /proc                                           a new procfs: only this job's processes
    /sys                                            read-only, without the mounts below it

What is *not* there: the service's checkout and database, other users' homes, other evaluations' folders,
the host's /tmp, /run and /var. Python folders are taken from the running interpreter (``sys.prefix``,
``sys.path``), except the kernelrank checkout itself, of which only ``harness/`` is shown.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import glob
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.isolation import linux

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
DEVICE_FILES = ("null", "zero", "full", "random", "urandom")
HARNESS_DIR = Path(__file__).resolve().parents[1]  # harness/, this module being in harness/isolation/
PACKAGE_ROOT = HARNESS_DIR.parent

# Paths inside the sandbox.
SCRATCH = "/tmp"
WORKDIR = "/tmp/work"
HOME = "/tmp/home"
CACHE = "/tmp/cache"
SHM_MB = 64
_SKELETON_OPTIONS = "size=1m,mode=755"
_RESERVED = ("/dev", "/proc", "/sys")
_JOB_FOLDERS = (WORKDIR, HOME, CACHE)
_KEPT_FLAGS = (
    (os.ST_NOSUID, linux.MS_NOSUID),
    (os.ST_NODEV, linux.MS_NODEV),
    (os.ST_NOEXEC, linux.MS_NOEXEC),
    (os.ST_NOATIME, linux.MS_NOATIME),
    (os.ST_NODIRATIME, linux.MS_NODIRATIME),
    (os.ST_RELATIME, linux.MS_RELATIME),
)


@dataclass(frozen=True)
class View:
    """What goes into one sandbox's filesystem."""

    binds: tuple[str, ...]  # host folders shown read-only at the same path
    symlinks: tuple[tuple[str, str], ...]  # (path, target) recreated so the host's paths still resolve
    devices: tuple[str, ...]  # /dev entries bound from the host
    scratch_mb: int


@functools.cache
def plan_view(scratch_mb: int) -> View:
    """The folders this interpreter and the GPU stack need, without the checkout (only its harness/).

    The same for every job of a server (its interpreter and environment do not change): computed once."""
    environ = dict(os.environ)
    wanted = [
        *SYSTEM_DIRS,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        str(HARNESS_DIR),
        *_python_path(),
        *_env_dirs(environ),
    ]
    binds: list[str] = []
    symlinks: dict[str, str] = {}
    for path in wanted:
        if not path or not os.path.exists(path):
            continue
        real = os.path.realpath(path)
        if real == SCRATCH or _under(real, _RESERVED) or _under(real, _JOB_FOLDERS):
            continue  # the sandbox has its own /tmp, /dev, /proc and /sys, and its job's folders
        symlinks.update(_symlinked_prefixes(path))
        if os.path.isdir(real):
            binds.append(real)
    devices = [f"/dev/{name}" for name in DEVICE_FILES] + sorted(glob.glob("/dev/nvidia*"))
    return View(
        binds=tuple(_outermost(binds)),
        symlinks=tuple(sorted(symlinks.items())),
        devices=tuple(d for d in devices if os.path.exists(d)),
        scratch_mb=scratch_mb,
    )


def build(view: View, mountpoint: str, staged: Path) -> None:
    """Assemble the view on ``mountpoint`` (an empty folder), copy ``staged`` in as the working directory, and
    make it this process's root. Needs mount rights in a private mount namespace and a new PID namespace."""
    root = mountpoint.rstrip("/")
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, _SKELETON_OPTIONS)
    _show(root, view, in_scratch=False)
    _devices(root, view.devices)
    os.makedirs(root + "/sys")
    try:
        linux.mount("/sys", root + "/sys", None, linux.MS_BIND)  # not recursive: no cgroup or debug mounts
    except OSError:  # a user namespace may not split /sys from its (locked) submounts
        linux.mount("/sys", root + "/sys", None, linux.MS_BIND | linux.MS_REC)
    os.makedirs(root + "/proc")
    linux.mount("proc", root + "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    os.makedirs(root + SCRATCH)
    linux.mount(
        "tmpfs", root + SCRATCH, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, f"size={view.scratch_mb}m,mode=1777"
    )
    _show(root, view, in_scratch=True)  # Python folders under the host's /tmp (a venv there), on top of ours
    shutil.copytree(staged, root + WORKDIR)
    for folder in (HOME, CACHE):
        os.makedirs(root + folder)
    for path in [*view.binds, "/sys"]:
        read_only(root + path)
    read_only(root + "/dev", recursive=False)
    read_only(root, recursive=False)
    os.chdir(root)
    linux.pivot_root(".", ".")  # the old root ends up on top of the new one...
    linux.umount_detached(".")  # ...and is detached, so nothing of the host's tree stays reachable
    os.chdir("/")


def _show(root: str, view: View, in_scratch: bool) -> None:
    """Bind the view's folders and make its symlinks: those under /tmp (``in_scratch``) or all the others."""
    for path, target in view.symlinks:
        if _under(path, [SCRATCH]) == in_scratch:
            _parent(root + path)
            with contextlib.suppress(FileExistsError):
                os.symlink(target, root + path)
    for path in view.binds:
        if _under(path, [SCRATCH]) == in_scratch:
            os.makedirs(root + path, exist_ok=True)
            linux.mount(path, root + path, None, linux.MS_BIND | linux.MS_REC)


def hand_over(uid: int, gid: int) -> None:
    """Give the working directory, HOME and the caches to the sandbox's user (after ``build``, still privileged)."""
    for folder in (WORKDIR, HOME, CACHE):
        for path in [Path(folder), *Path(folder).rglob("*")]:
            os.lchown(path, uid, gid)


def read_only(path: str, recursive: bool = True) -> None:
    """Make the mount at ``path`` (and the mounts below it) read-only, keeping its other flags."""
    if recursive:
        try:
            linux.make_tree_read_only(path)
            return
        except OSError as exc:  # before Linux 5.12, or a kernel that does not implement it (gVisor)
            if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
                raise
    points = _mounts_under(path) if recursive else [path]
    for point in points:
        flags = os.statvfs(point).f_flag
        kept = sum(ms for st, ms in _KEPT_FLAGS if flags & st)  # a user namespace may not clear them
        linux.mount(None, point, None, linux.MS_BIND | linux.MS_REMOUNT | linux.MS_RDONLY | kept)


def _devices(root: str, devices: Iterable[str]) -> None:
    os.makedirs(root + "/dev")
    linux.mount("tmpfs", root + "/dev", "tmpfs", linux.MS_NOSUID, "size=64k,mode=755")
    for device in devices:
        target = root + device
        if os.path.isdir(device):
            os.makedirs(target)
        else:
            Path(target).touch()
        linux.mount(device, target, None, linux.MS_BIND | linux.MS_REC)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, f"{root}/dev/{name}")
    os.makedirs(root + "/dev/shm")
    linux.mount("tmpfs", root + "/dev/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, f"size={SHM_MB}m,mode=1777")


def _python_path() -> list[str]:
    """``sys.path`` folders, with the checkout itself left out (its harness/ is bound on its own)."""
    return [p for p in sys.path if p and os.path.realpath(p) != str(PACKAGE_ROOT)]


def _env_dirs(environ: dict[str, str]) -> list[str]:
    dirs = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    return dirs + [environ[k] for k in ("CUDA_HOME", "CUDA_PATH") if environ.get(k)]


def _symlinked_prefixes(path: str) -> dict[str, str]:
    """Every symlink on the way to ``path`` (e.g. /lib64 -> usr/lib64), to be recreated inside."""
    found: dict[str, str] = {}
    current = "/"
    for part in Path(os.path.abspath(path)).parts[1:]:
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            found[candidate] = os.readlink(candidate)
            current = os.path.realpath(candidate)
        else:
            current = candidate
    return found


def _outermost(paths: list[str]) -> list[str]:
    """Drop paths inside another path of the list, and duplicates; keeps sorted order."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not _under(path, kept):
            kept.append(path)
    return kept


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _parent(path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)


def _mounts_under(path: str) -> list[str]:
    points = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            point = _unescape(line.split()[4])
            if point == path or point.startswith(path.rstrip("/") + "/"):
                points.append(point)
    return points


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
