import torch
from task import input_t, output_t
from utils import DeterministicContext, get_device, make_match_reference


def generate_input(m: int, n: int, k: int, seed: int) -> input_t:
    device = get_device()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.empty(m, k, device=device, dtype=torch.float32).uniform_(0, 1, generator=gen)
    b = torch.empty(k, n, device=device, dtype=torch.float32).uniform_(0, 1, generator=gen)
    c = torch.empty(m, n, device=device, dtype=torch.float32)
    return a, b, c


def ref_kernel(data: input_t) -> output_t:
    a, b, c = data
    with DeterministicContext():
        return a @ b


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
