"""The worker's side of cached ``load_inline`` builds: ask the harness server, load what it built.

``install`` replaces ``torch.utils.cpp_extension.load_inline`` in the worker (before the submission is
imported) with a version that sends the call's arguments to the server as a ``build`` record and waits for
the built module. The server looks the build up in its compile cache or compiles it in a sandboxed builder
(``harness.builds.builder``), then sends the module's bytes; this process writes them to its own temporary folder
and imports them as torch would. The submission's process never writes the cache, so replacing this hook
(it is the submission's own process) only costs the submission its cache. Arguments that are not plain data,
or a server that declines, fall back to torch's own build in the job's private folders.
"""

from __future__ import annotations

import base64
import functools
import inspect
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.builds import build
from harness.channel import RecordReader, read_record


class BuildChannel(Protocol):
    """Where a build request goes and its answer comes back on ``fd``: a ``harness.channel.Outbox``, or the
    runner's relay through the judge (``harness.runner.runner_process``)."""

    fd: int

    def send(self, kind: str, **fields: Any) -> None: ...


def install(outbox: BuildChannel) -> None:
    try:
        from torch.utils import cpp_extension
    except ImportError:
        return
    original = cpp_extension.load_inline
    signature = inspect.signature(original)

    @functools.wraps(original)
    def load_inline(*args: Any, **kwargs: Any) -> Any:
        try:
            arguments = dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:
            return original(*args, **kwargs)  # let torch say what is wrong with the call
        if build.extension_request(arguments, "", {}) is None:
            return original(*args, **kwargs)
        reply = _ask(outbox, arguments)
        if "files" not in reply:
            if reply.get("error"):
                raise RuntimeError(
                    f"Error building extension '{arguments['name']}': {reply['error']}\n{reply.get('log', '')}"
                )
            return original(*args, **kwargs)
        return _load(cpp_extension._import_module_from_library, arguments, reply["files"])

    cpp_extension.load_inline = load_inline


def _ask(outbox: BuildChannel, arguments: dict[str, Any]) -> dict[str, Any]:
    outbox.send("build", arguments=arguments)
    reply = read_record(outbox.fd, RecordReader())
    return reply if isinstance(reply, dict) else {}


def _load(importer: Callable[[str, str, bool], Any], arguments: dict[str, Any], files: dict[str, str]) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="kernelrank-extension-"))
    for name, data in files.items():
        (folder / Path(name).name).write_bytes(base64.b64decode(data))
    return importer(arguments["name"], str(folder), arguments.get("is_python_module", True))
