"""softmax: row-wise softmax, checked against a float64 computation with dtype-tied tolerances."""

import torch
from task import input_t, output_t
from utils import make_generator, match_reference, uniform

DTYPES = {32: torch.float32, 16: torch.bfloat16}
# (rtol, atol). float32: exp of (x - max) in float32 is good to a few 1e-6 for these logits; 1e-4 leaves
# room and still rejects a bfloat16 computation (2**-9). bfloat16: one or two ulps (2**-7 at worst).
TOLERANCES = {torch.float32: (1e-4, 1e-7), torch.bfloat16: (1e-2, 1e-5)}


def generate_input(rows: int, cols: int, bits: int, seed: int) -> input_t:
    """Normal logits times a seed-dependent scale, plus an offset per row in [-100, 100]."""
    if bits not in DTYPES:
        raise ValueError(f"softmax spec has bits={bits}; use 32 (float32) or 16 (bfloat16).")
    gen = make_generator(seed)
    logits = torch.empty(rows, cols, dtype=torch.float32).normal_(0.0, uniform(1.0, 10.0, gen), generator=gen)
    row_offsets = torch.empty(rows, 1, dtype=torch.float32).uniform_(-100.0, 100.0, generator=gen)
    return logits.add_(row_offsets).to(DTYPES[bits])


def ref_kernel(data: input_t) -> output_t:
    return torch.softmax(data.to(torch.float64), dim=-1).to(data.dtype)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    rtol, atol = TOLERANCES[data.dtype]
    return match_reference(data, output, ref_kernel, rtol=rtol, atol=atol)
