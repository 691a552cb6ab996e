"""matmul: C = A @ B for bfloat16 inputs, with a float32-accumulated reference."""

import math

import torch
from task import input_t, output_t
from utils import make_generator, match_reference, uniform

# bfloat16 keeps 8 significant bits: rounding C alone costs up to 2**-8 relative, and a float32 accumulation
# adds little. 2e-2 relative, plus 1e-2 of C's typical size absolute (elements near zero), accepts every
# float32-accumulated kernel and rejects float8 inputs or a bfloat16 accumulator.
RTOL = 2e-2
ATOL_FRACTION = 1e-2


def generate_input(m: int, n: int, k: int, seed: int) -> input_t:
    """Row-major normal matrices, each with its own seed-dependent scale."""
    gen = make_generator(seed)
    a = torch.empty(m, k, dtype=torch.float32).normal_(0.0, uniform(0.25, 4.0, gen), generator=gen)
    b = torch.empty(k, n, dtype=torch.float32).normal_(0.0, uniform(0.25, 4.0, gen), generator=gen)
    return a.to(torch.bfloat16), b.to(torch.bfloat16)


def ref_kernel(data: input_t) -> output_t:
    """A float32 product of the exact inputs, rounded once to bfloat16.

    TF32 is allowed here on purpose: every bfloat16 value is exact in TF32 (10 mantissa bits >= 7), so TF32
    tensor cores multiply the exact inputs and accumulate in float32, many times faster than IEEE float32
    (ranked mode checks every timed call).
    """
    a, b = data
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        return (a.to(torch.float32) @ b.to(torch.float32)).to(torch.bfloat16)
    finally:
        torch.set_float32_matmul_precision(saved)


def _typical_magnitude(data: input_t) -> float:
    """rms(A) * rms(B) * sqrt(k): the standard deviation of an element of A @ B for random inputs."""
    a, b = data
    rms = lambda t: t.to(torch.float32).square().mean().sqrt().item()
    return rms(a) * rms(b) * math.sqrt(a.shape[1])


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    atol = ATOL_FRACTION * _typical_magnitude(data)
    return match_reference(data, output, ref_kernel, rtol=RTOL, atol=atol)
