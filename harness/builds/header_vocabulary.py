"""What each header tier declares, read once from the preprocessor, so a build knows its tier before compiling.

A light tier (``harness.builds.header_tiers``) only builds when the source uses nothing that its headers leave
out. Compiling to find out costs seconds per tier; preprocessing torch's headers costs about a second, once per
process, and depends on nothing a submission sends. ``Vocabulary`` holds, per header set, every identifier and
every macro the preprocessor printed (``-E -dD``): a name the full ``torch/extension.h`` knows and a tier's headers
do not (``torch::nn``, ``torch::indexing::Slice``, a dispatch macro) rules that tier out; a name neither knows
comes from the source's own includes and rules nothing out.

The harness server loads it (``header_tiers.vocabulary``) at its start, or before it forks the first builder of an
inline extension (``Builds.start``), so every later builder inherits it. It is not read in the background: the
server sweeps every process of its own that outlives a job, and would count a preprocessor still running as the
job's leftover.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PREPROCESS_TIMEOUT_S = 60.0
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DEFINE = re.compile(r"(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)")
# a declaration of a caster (attributes may sit between ``struct`` and its name)
_CASTER = re.compile(r"\b(?:struct|class)\b[^;{}\n]*?\b(?:type_caster|\w+_holder_caster)\s*<([^{;]*)")


@dataclass(frozen=True)
class Words:
    """What one header set declares: every identifier the preprocessor printed, and the macros it defined."""

    identifiers: frozenset[str]
    macros: frozenset[str]
    casters: frozenset[str]  # pybind11 type_caster specialisations: how the bindings convert each argument


@dataclass(frozen=True)
class Vocabulary:
    full: Words  # torch/extension.h: what a source as written sees
    sets: dict[str, Words]  # per header set of a tier (header_tiers.HEADER_SETS' names)

    def binds_alike(self, tier_set: str) -> bool:
        """Whether generated bindings compiled against the set convert arguments as torch/extension.h's would."""
        words = self.sets.get(tier_set)
        return words is not None and words.casters == self.full.casters

    def missing(self, tier_set: str, names: set[str], macros: set[str]) -> set[str]:
        """The names and macros the full headers declare that the tier's set does not."""
        if (words := self.sets.get(tier_set)) is None:  # not preprocessed: nothing known to be missing
            return set()
        return (names & self.full.identifiers - words.identifiers) | (macros & self.full.macros - words.macros)


@functools.cache
def load(header_sets: tuple[tuple[str, tuple[str, ...]], ...]) -> Vocabulary | None:
    """The words of torch/extension.h and of each (name, header lines) set, preprocessed side by side once per
    process; None when the host compiler cannot preprocess torch's headers (the builder then tries every tier)."""
    running = {}
    with contextlib.suppress(OSError, ImportError):  # no host compiler, no torch: no vocabulary
        for name, lines in (("full", ("#include <torch/extension.h>",)), *header_sets):
            running[name] = _start("\n".join(lines) + "\n")
    words: dict[str, Words] = {}
    for name, (process, output) in running.items():
        try:
            process.wait(timeout=PREPROCESS_TIMEOUT_S)
            text = output.read_text(errors="replace") if process.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
            text = ""
        finally:
            output.unlink(missing_ok=True)
        if text:
            casters = frozenset(" ".join(found.split()) for found in _CASTER.findall(text))
            words[name] = Words(frozenset(_IDENTIFIER.findall(text)), frozenset(_DEFINE.findall(text)), casters)
    if len(words) < len(running) or "full" not in words:
        log.info("could not preprocess torch's header sets; the builder tries the header tiers in turn")
        return None
    full = words.pop("full")
    return Vocabulary(full, words)


def _start(source: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``c++ -E -dD`` of ``source`` with the include folders and defines of torch's extension builds."""
    import torch  # not torch.utils.cpp_extension: on a GPU host its import opens the GPU, and this runs in the server

    torch_include = Path(torch.__file__).parent / "include"  # where cpp_extension.include_paths() points too
    includes = [str(torch_include), str(torch_include / "torch" / "csrc" / "api" / "include")]
    includes.append(sysconfig.get_paths()["include"])
    handle, name = tempfile.mkstemp(prefix="kernelrank-vocabulary-", suffix=".i")
    command = [
        os.environ.get("CXX", "c++"),
        "-x",
        "c++",
        "-std=c++17",
        "-E",
        "-P",
        "-dD",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        *(f"-I{path}" for path in includes),
        "-",
    ]
    try:
        with os.fdopen(handle, "wb") as output:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=output, stderr=subprocess.DEVNULL)
    except OSError:
        Path(name).unlink(missing_ok=True)
        raise
    assert process.stdin is not None
    process.stdin.write(source.encode())
    process.stdin.close()
    return process, Path(name)
