"""The template every evaluation is forked from: a process that imported torch once and never saw a job.

The harness server receives jobs (sources, problem files, results pass through its memory), so a child
forked from it would inherit what earlier jobs left on its heap: the red-team audit recovered part of another
person's kernel and an earlier run's output from a job's own memory. So before the first job arrives the
server forks a zygote, which keeps nothing but its socket to the server. Per evaluation (``spawn``) the server
hands it the child's three descriptors (result channel, captured stdout and stderr); the zygote forks, the
fork forks the child and exits, so the child is reparented to the server (a child subreaper) and the server
waits for it as before. The child holds none of the zygote's descriptors and learns its job only then, from
the first record on its own channel (``receive``): job data only ever enters a process after its fork.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import resource
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, NoReturn

from harness.channel import RecordReader, read_record, send_record

_PID = struct.Struct("<i")
REPARENT_WAIT_S = 60.0  # the middle process exits at once, but a busy host (a fork bomb dying) can delay it
Child = Callable[[int, int, int], NoReturn]  # (channel fd, stdout fd, stderr fd)


class ZygoteError(RuntimeError):
    """The zygote is gone or did not fork."""


class Zygote:
    """The server's handle on its zygote."""

    def __init__(self, child: Child) -> None:
        """Fork the zygote now; each spawned evaluation runs ``child`` with its three descriptors."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs, child)
        theirs.close()
        self.pid, self._sock = pid, ours

    def spawn(self, fds: tuple[int, int, int]) -> int:
        """A fresh child of the zygote's, now the server's child, given ``fds``; its pid."""
        try:
            socket.send_fds(self._sock, [b"fork"], list(fds))
            answer = self._sock.recv(_PID.size, socket.MSG_WAITALL)
        except OSError as exc:
            raise ZygoteError(f"the zygote is gone ({exc})") from exc
        if len(answer) != _PID.size:
            raise ZygoteError("the zygote is gone")
        (pid,) = _PID.unpack(answer)
        if pid <= 0:
            raise ZygoteError("the zygote could not fork")
        _wait_for_parent(pid, os.getpid())
        return pid

    def close(self) -> None:
        self._sock.close()  # the zygote reads end of file and exits
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def hand_over(channel: socket.socket, **values: Any) -> None:
    """Send the child its job (from the trusted server, before anything of the job runs)."""
    send_record(channel, {"job": base64.b64encode(pickle.dumps(values)).decode()})


def receive(channel_fd: int) -> dict[str, Any]:
    """The child's side of ``hand_over``: what the server sent, before anything else is read."""
    return pickle.loads(base64.b64decode(read_record(channel_fd, RecordReader())["job"]))


def _serve(sock: socket.socket, child: Child) -> NoReturn:
    """The zygote: keep only the socket (and the server's stderr), fork on request, until end of file."""
    keep = sock.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(sock, 16, 3)
        except OSError:
            os._exit(0)
        if len(fds) != 3:
            os._exit(0)  # end of file, or a request the server never makes
        middle = os.fork()
        if middle == 0:
            try:
                grandchild = os.fork()
            except OSError:
                grandchild = -1
            if grandchild == 0:
                sock.close()  # the evaluation never holds the zygote's socket
                child(*fds)
            sock.sendall(_PID.pack(grandchild))
            os._exit(0)
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(middle, 0)


def _wait_for_parent(pid: int, parent: int) -> None:
    """Until ``pid`` is reparented to ``parent`` (its own parent exits right after forking it)."""
    deadline = time.monotonic() + REPARENT_WAIT_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            return  # already gone: the server's waitpid finds it
        if int(fields[1]) == parent:
            return
        time.sleep(0.0005)
    raise ZygoteError(f"the evaluation's process {pid} was not handed to the server")
