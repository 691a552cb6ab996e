"""vectoradd: C = A + B for float16 matrices, correctly rounded to float16."""

import torch
from task import input_t, output_t
from utils import make_generator, make_match_reference, uniform

# One float16 ulp is 2**-10 ~ 9.8e-4 relative: a correctly rounded sum passes, a bfloat16 detour does not.
RTOL = ATOL = 1e-3


def generate_input(size: int, seed: int) -> input_t:
    """Two normal float16 matrices, each with its own seed-dependent scale."""
    gen = make_generator(seed)
    a = torch.empty(size, size, dtype=torch.float16).normal_(0.0, uniform(0.5, 8.0, gen), generator=gen)
    b = torch.empty(size, size, dtype=torch.float16).normal_(0.0, uniform(0.5, 8.0, gen), generator=gen)
    return a, b


def ref_kernel(data: input_t) -> output_t:
    a, b = data
    return (a.float() + b.float()).half()  # exact in float32, then one rounding to float16


check_implementation = make_match_reference(ref_kernel, rtol=RTOL, atol=ATOL)
