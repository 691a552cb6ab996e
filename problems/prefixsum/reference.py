"""prefixsum: inclusive scan of a float32 vector, checked against a float64 scan."""

import math

import torch
from task import input_t, output_t
from utils import check_dtype, make_generator, uniform, verbose_allclose, verdict


def relative_tolerance(size: int) -> float:
    """Error allowed per unit of sum(|x[:i+1]|).

    A blocked float32 scan carries block totals along a chain of size / block additions, and its rounding
    error grows with that chain; with blocks of 128 elements or more it stays below a tenth of this bound
    (simulated up to 128 Mi elements). One sequential float32 loop over millions of elements does not
    stay within it. The 1e-5 floor still rejects a bfloat16 scan on small inputs (2**-9 relative).
    """
    return max(1e-5, 2e-7 * math.sqrt(size))


def generate_input(size: int, seed: int) -> input_t:
    """Normal values with a seed-dependent scale and offset, so the running sums drift per seed."""
    gen = make_generator(seed)
    scale, offset = uniform(0.1, 10.0, gen), uniform(-10.0, 10.0, gen)
    return torch.empty(size, dtype=torch.float32).normal_(offset, scale, generator=gen)


def ref_kernel(data: input_t) -> output_t:
    return torch.cumsum(data.to(torch.float64), dim=0).to(torch.float32)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    expected = ref_kernel(data)
    abs_prefix = torch.cumsum(data.to(torch.float64).abs(), dim=0)
    atol = relative_tolerance(data.numel()) * abs_prefix
    return verdict(check_dtype(output, expected) + verbose_allclose(output, expected, rtol=0, atol=atol))
