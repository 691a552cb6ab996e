"""vectorsum: the sum of a float32 vector, checked against a float64 sum."""

import torch
from task import input_t, output_t
from utils import check_dtype, make_generator, uniform, verbose_allclose, verdict

# A float32 tree or blocked reduction errs by a few ulps times log2(size) relative to sum(|x|) (~2e-6 at 64M
# elements); 1e-5 leaves room for that and still rejects a bfloat16 result (2**-9 relative error).
RELATIVE_TO_ABS_SUM = 1e-5


def generate_input(size: int, seed: int) -> input_t:
    """Normal values with a seed-dependent scale and offset, so the sum is large and differs per seed."""
    gen = make_generator(seed)
    scale, offset = uniform(0.1, 10.0, gen), uniform(-100.0, 100.0, gen)
    return torch.empty(size, dtype=torch.float32).normal_(offset, scale, generator=gen)


def ref_kernel(data: input_t) -> output_t:
    return data.sum(dtype=torch.float64).to(torch.float32)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    """|output - sum| <= 1e-5 * sum(|x|): the error bound scales with the magnitudes summed, not the result."""
    expected = ref_kernel(data)
    atol = RELATIVE_TO_ABS_SUM * data.abs().sum(dtype=torch.float64).item()
    return verdict(check_dtype(output, expected) + verbose_allclose(output, expected, rtol=0, atol=atol))
