"""grayscale: Y = 0.2989 R + 0.5870 G + 0.1140 B, checked against a float64 computation."""

import torch
from task import input_t, output_t
from utils import make_generator, make_match_reference, uniform

WEIGHTS = (0.2989, 0.5870, 0.1140)
# A float32 weighted sum of three terms errs by a few ulps (~3e-7); 1e-5 rejects a float16 detour (~5e-4).
RTOL, ATOL = 1e-5, 1e-6


def generate_input(size: int, seed: int) -> input_t:
    """Uniform channel values in [0, gain) with a seed-dependent gain."""
    gen = make_generator(seed)
    gain = uniform(0.5, 2.0, gen)
    return torch.empty(size, size, 3, dtype=torch.float32).uniform_(0.0, gain, generator=gen)


def ref_kernel(data: input_t) -> output_t:
    weights = torch.tensor(WEIGHTS, dtype=torch.float64, device=data.device)
    return (data.to(torch.float64) @ weights).to(torch.float32)  # (size, size, 3) @ (3,)


check_implementation = make_match_reference(ref_kernel, rtol=RTOL, atol=ATOL)
