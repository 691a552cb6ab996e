"""Lighter torch headers for a ``load_inline`` build, chosen from the source before compiling (docs/cuda.md).

``torch/extension.h`` is torch's whole C++ frontend (``torch/all.h``: nn, optim, data) plus its Python bindings,
and most of a first inline-CUDA build is spent parsing it: in the generated ``main.cpp``, and three times more in
nvcc's passes over a CUDA source that includes it (or ``torch/types.h``, which ``load_inline`` prepends to every
CUDA source). Two lighter tiers stand in for it, the same sources otherwise:

- **light**: ``main.cpp`` against tensors and pybind's tensor casters; each CUDA source against ``torch/types.h``.
- **ops**: each source against the tensor class, the dispatch macros (``AT_DISPATCH_*``), the tensor operators
  (``a * 2``) and the header of each ATen operator it names as ``torch::op(`` or ``at::op(`` (one small file each,
  in place of all two thousand), with torch's names as ATen's; ``main.cpp`` adds pybind's tensor casters. About
  half of *light*'s compile time, for both units.

``plan`` picks the tiers worth trying from the source text: a tier is left out when the source names something
torch's full headers declare and the tier's do not (``header_vocabulary``), when its bindings would convert
arguments with other pybind casters than ``torch/extension.h``'s, or when it would compile the CUDA source exactly
as written anyway (*light* on a source that does not include ``torch/extension.h``). The builder tries what is
left, lightest first, then the sources as written, in one folder: a tier that does not compile costs its attempt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.builds import header_vocabulary
from harness.builds.header_vocabulary import Vocabulary

LIGHT_CPP_HEADERS = (
    "#include <torch/types.h>",
    "#include <torch/csrc/utils/pybind.h>",
    "#include <torch/csrc/Exceptions.h>",
)
CUDA_RUNTIME_HEADERS = ("#include <cuda.h>", "#include <cuda_runtime.h>")  # what load_inline itself prepends
LIGHT_CUDA_HEADERS = ("#include <torch/types.h>", *CUDA_RUNTIME_HEADERS)
# ATen/TensorOperators.h includes every operator (ATen/Functions.h) unless told that operators come one header each;
# the flag is set for that header only, so the source's own includes behave as written.
OPS_CUDA_HEADERS = (
    "#include <ATen/core/Tensor.h>",
    "#include <ATen/Dispatch.h>",
    "#include <ATen/ops/empty_like.h>",
    "#ifndef AT_PER_OPERATOR_HEADERS",
    "#define AT_PER_OPERATOR_HEADERS",
    "#include <ATen/TensorOperators.h>",
    "#undef AT_PER_OPERATOR_HEADERS",
    "#else",
    "#include <ATen/TensorOperators.h>",
    "#endif",
)
_SIZED_DTYPES = {"UInt8": "Byte", "Int8": "Char", "Int16": "Short", "Int32": "Int", "Int64": "Long"}
_SIZED_DTYPES |= {"Float16": "Half", "Float32": "Float", "Float64": "Double"}
_SHORT_DTYPES = {"U8": "Byte", "I8": "Char", "I16": "Short", "I32": "Int", "I64": "Long"}
_SHORT_DTYPES |= {"F16": "Half", "F32": "Float", "F64": "Double"}
TORCH_AS_ATEN = (  # what torch/types.h adds to ATen's names, but for its autograd factories
    "namespace torch { using namespace at; using Dtype = at::ScalarType; "
    + " ".join(f"constexpr auto k{ours} = at::k{aten};" for ours, aten in (_SIZED_DTYPES | _SHORT_DTYPES).items())
    + " }"
)
# main.cpp in the ops tier: the CUDA sources' headers and pybind's tensor casters, without ATen's every operator
OPS_MAIN_HEADERS = (*OPS_CUDA_HEADERS, *LIGHT_CPP_HEADERS[1:])
# the header sets whose words header_vocabulary reads; the main_ ones compile the bindings (main.cpp)
HEADER_SETS = {
    "main_light": LIGHT_CPP_HEADERS,
    "main_ops": (*OPS_MAIN_HEADERS, TORCH_AS_ATEN),
    "ops": (*OPS_CUDA_HEADERS, TORCH_AS_ATEN),
}
_EXTENSION_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"]')
_TORCH_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*[<"]torch/')
_NAMED_OP = re.compile(r"\b(?:torch|at)::(\w+)\s*\(")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_QUALIFIED = re.compile(r"\b(?:torch|at|c10)((?:\s*::\s*\w+)+)")
_MACRO = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
_OWN_MACRO = re.compile(r"(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)")


def vocabulary() -> Vocabulary | None:
    """What torch/extension.h and each of HEADER_SETS declare, read once per process (header_vocabulary)."""
    return header_vocabulary.load(tuple(HEADER_SETS.items()))


def plan(options: dict[str, Any], ops_folder: Path, vocabulary: Vocabulary | None) -> list[tuple[str, dict[str, Any]]]:
    """The lighter builds of one load_inline call worth trying, lightest first, each as (tier name, arguments);
    ``ops_folder`` is torch's ``ATen/ops``, ``vocabulary`` what each header set declares (None: try every tier)."""
    cpp = _sources(options.get("cpp_sources"))
    cuda = _sources(options.get("cuda_sources"))
    chosen = []
    main_light = _fits(vocabulary, "main_light", cpp, ops_folder)
    main_ops = _fits(vocabulary, "main_ops", cpp, ops_folder)
    ops = ops_options(options, ops_folder, light_main=not main_ops)
    if ops is not None and (main_ops or main_light) and _fits(vocabulary, "ops", cuda, ops_folder):
        chosen.append(("ops", ops))
    # light changes a CUDA source only where it includes torch/extension.h; main.cpp alone compiles beside it
    lightens_cuda = not cuda or any(_EXTENSION_INCLUDE.search(source) for source in cuda)
    light = light_options(options)
    if light is not None and main_light and lightens_cuda and _fits(vocabulary, "main_light", cuda, ops_folder):
        chosen.append(("light", light))
    return chosen


def light_options(options: dict[str, Any]) -> dict[str, Any] | None:
    """load_inline's arguments against the *light* tier; None when the call chose its headers
    (``no_implicit_headers``)."""
    if options.get("no_implicit_headers"):
        return None
    light = dict(
        options,
        no_implicit_headers=True,
        cpp_sources=[*LIGHT_CPP_HEADERS, *map(lighten, _sources(options.get("cpp_sources")))],
    )
    if cuda := _sources(options.get("cuda_sources")):
        light["cuda_sources"] = [*LIGHT_CUDA_HEADERS, *map(lighten, cuda)]
    return light


def ops_options(options: dict[str, Any], ops_folder: Path, light_main: bool = False) -> dict[str, Any] | None:
    """load_inline's arguments against the *ops* tier (main.cpp as in *light* with ``light_main``, or where the C++
    sources include more of torch); None where the call chose its headers, where a CUDA source includes more of
    torch anyway, or where nothing would be lighter than *light*."""
    light = light_options(options)
    cuda = [_EXTENSION_INCLUDE.sub("", source) for source in _sources(options.get("cuda_sources"))]
    if light is None or any(_TORCH_INCLUDE.search(source) for source in cuda):
        return None
    cpp = [_EXTENSION_INCLUDE.sub("", source) for source in _sources(options.get("cpp_sources"))]
    if light_main or any(_TORCH_INCLUDE.search(source) for source in cpp):
        if not cuda:
            return None
        main = light["cpp_sources"]
    else:
        main = [*OPS_MAIN_HEADERS, *_op_headers(cpp, ops_folder), TORCH_AS_ATEN, *cpp]
    ops = dict(light, cpp_sources=main)
    if cuda:
        headers = [*OPS_CUDA_HEADERS, *_op_headers(cuda, ops_folder), TORCH_AS_ATEN]
        ops["cuda_sources"] = [*headers, *CUDA_RUNTIME_HEADERS, *cuda]
    return ops


def lighten(source: str) -> str:
    """``source`` with every ``#include <torch/extension.h>`` as ``#include <torch/types.h>``."""
    return _EXTENSION_INCLUDE.sub("#include <torch/types.h>", source)


def named_ops(sources: list[str], ops_folder: Path) -> list[str]:
    """The ATen operators the sources call by name (``torch::op(``, ``at::op(``), each with a header of its own."""
    return sorted({op for text in sources for op in _NAMED_OP.findall(text) if (ops_folder / f"{op}.h").is_file()})


def _op_headers(sources: list[str], ops_folder: Path) -> list[str]:
    return [f"#include <ATen/ops/{op}.h>" for op in named_ops(sources, ops_folder)]


def used_names(source: str) -> tuple[set[str], set[str]]:
    """What ``source`` (comments aside) asks of torch: every name in a ``torch::``, ``at::`` or ``c10::`` path,
    and every macro-like NAME_WITH_UNDERSCORES."""
    code = _COMMENT.sub(" ", source)
    names = {name.strip() for path in _QUALIFIED.findall(code) for name in path.split("::") if name.strip()}
    return names, set(_MACRO.findall(code)) - set(_OWN_MACRO.findall(code))


def _fits(vocabulary: Vocabulary | None, header_set: str, sources: list[str], ops_folder: Path) -> bool:
    """Whether the sources name nothing torch's full headers declare and ``header_set`` leaves out (an operator
    the ops tier includes by name counts as declared there)."""
    if vocabulary is None:
        return True
    if header_set.startswith("main_") and not vocabulary.binds_alike(header_set):
        return False
    for source in sources:
        names, macros = used_names(source)
        missing = vocabulary.missing(header_set, names, macros)
        if "ops" in header_set:  # the operators it calls come with their own headers
            missing -= set(named_ops([source], ops_folder))
        if missing:
            return False
    return True


def _sources(value: str | list[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])
