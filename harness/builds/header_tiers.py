"""Lighter torch headers for a ``load_inline`` build, lightest first (docs/cuda.md, "Light headers").

``torch/extension.h`` is torch's whole C++ frontend (``torch/all.h``: nn, optim, data) plus its Python bindings,
and most of a first inline-CUDA build is spent parsing it: in the generated ``main.cpp``, and three times more in
nvcc's passes over a CUDA source that includes it. Two lighter tiers stand in for it, the same sources otherwise:

- **light**: ``main.cpp`` against tensors and pybind's tensor casters; each CUDA source against ``torch/types.h``.
- **ops**: ``main.cpp`` as in *light*; each CUDA source against the tensor class and the header of each ATen
  operator it names as ``torch::op(`` or ``at::op(`` (one small file each, in place of all two thousand), with
  torch's names as ATen's. About half of *light*'s nvcc time; a source that uses more (operators such as
  ``a * 2``, ``torch::from_blob``) does not compile against it.

The builder tries them in that order, then the sources as written. The tiers share their ``main.cpp``, so a
tier that does not compile costs its CUDA source's attempt, or the main.cpp it shares, if that takes longer.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LIGHT_CPP_HEADERS = (
    "#include <torch/types.h>",
    "#include <torch/csrc/utils/pybind.h>",
    "#include <torch/csrc/Exceptions.h>",
)
CUDA_RUNTIME_HEADERS = ("#include <cuda.h>", "#include <cuda_runtime.h>")  # what load_inline itself prepends
LIGHT_CUDA_HEADERS = ("#include <torch/types.h>", *CUDA_RUNTIME_HEADERS)
OPS_CUDA_HEADERS = ("#include <ATen/core/Tensor.h>",)
_SIZED_DTYPES = {"UInt8": "Byte", "Int8": "Char", "Int16": "Short", "Int32": "Int", "Int64": "Long"}
_SIZED_DTYPES |= {"Float16": "Half", "Float32": "Float", "Float64": "Double"}
_SHORT_DTYPES = {"U8": "Byte", "I8": "Char", "I16": "Short", "I32": "Int", "I64": "Long"}
_SHORT_DTYPES |= {"F16": "Half", "F32": "Float", "F64": "Double"}
TORCH_AS_ATEN = (  # what torch/types.h adds to ATen's names, but for its autograd factories
    "namespace torch { using namespace at; using Dtype = at::ScalarType; "
    + " ".join(f"constexpr auto k{ours} = at::k{aten};" for ours, aten in (_SIZED_DTYPES | _SHORT_DTYPES).items())
    + " }"
)
_EXTENSION_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"]')
_TORCH_INCLUDE = re.compile(r'(?m)^[ \t]*#[ \t]*include[ \t]*[<"]torch/')
_NAMED_OP = re.compile(r"\b(?:torch|at)::(\w+)\s*\(")


def tiers(options: dict[str, Any], ops_folder: Path) -> list[dict[str, Any]]:
    """The lighter builds of one load_inline call, lightest first (``ops_folder``: torch's ``ATen/ops``)."""
    return [tier for tier in (ops_options(options, ops_folder), light_options(options)) if tier is not None]


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


def ops_options(options: dict[str, Any], ops_folder: Path) -> dict[str, Any] | None:
    """load_inline's arguments against the *ops* tier; None without CUDA sources, where the call chose its
    headers, or where a CUDA source includes more of torch anyway."""
    light = light_options(options)
    cuda = [_EXTENSION_INCLUDE.sub("", source) for source in _sources(options.get("cuda_sources"))]
    if light is None or not cuda or any(_TORCH_INCLUDE.search(source) for source in cuda):
        return None
    named = sorted({op for source in cuda for op in _NAMED_OP.findall(source) if (ops_folder / f"{op}.h").is_file()})
    headers = [*OPS_CUDA_HEADERS, *(f"#include <ATen/ops/{op}.h>" for op in named), TORCH_AS_ATEN]
    return dict(light, cuda_sources=[*headers, *CUDA_RUNTIME_HEADERS, *cuda])


def lighten(source: str) -> str:
    """``source`` with every ``#include <torch/extension.h>`` as ``#include <torch/types.h>``."""
    return _EXTENSION_INCLUDE.sub("#include <torch/types.h>", source)


def _sources(value: str | list[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])
