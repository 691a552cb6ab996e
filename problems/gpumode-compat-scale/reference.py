import torch
from task import input_t, output_t
from utils import get_device, make_match_reference


def ref_kernel(data: input_t) -> output_t:
    """
    Reference implementation of vector scaling.
    Args:
        data: tuple (x, factor, output): the vector, the scale factor and a preallocated output buffer
    Returns:
        the output buffer, holding x * factor (the reference writes it, so submissions may write it too)
    """
    x, factor, output = data
    torch.mul(x, factor, out=output)
    return output


def generate_input(size: int, seed: int) -> input_t:
    """
    Generates a random vector, a random factor in [0.5, 4) and a zeroed output buffer.
    GPU MODE references usually say device="cuda"; this one asks utils.get_device() (CUDA when present,
    else the CPU), so the same file also runs on a machine without a GPU.
    """
    device = get_device()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(size, device=device, dtype=torch.float32, generator=gen).contiguous()
    factor = (torch.rand(1, device=device, generator=gen) * 3.5 + 0.5).item()
    output = torch.zeros_like(x)
    return x, factor, output


check_implementation = make_match_reference(ref_kernel)
