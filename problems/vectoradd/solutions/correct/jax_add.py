#!kernelrank requires cuda
"""Correct, in JAX: the tensors cross over by DLPack (no copy), the sum is taken in float32 and rounded once.

JAX runs on streams of its own, which torch's timing events do not see: the call waits for JAX's result
(``block_until_ready``) before handing it over, or the work would finish after the timed interval (and the
harness rejects it as escaped timing). JAX is not installed on every machine, hence the CUDA header: CPU
test runs skip this file.
"""

import jax
import jax.numpy as jnp
import torch
from task import input_t, output_t


@jax.jit
def _add(a: jax.Array, b: jax.Array) -> jax.Array:
    return (a.astype(jnp.float32) + b.astype(jnp.float32)).astype(jnp.float16)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    total = _add(jax.dlpack.from_dlpack(a), jax.dlpack.from_dlpack(b)).block_until_ready()
    return torch.from_dlpack(total)
