import torch
from task import input_t, output_t
from utils import get_device, verbose_allequal


def ref_kernel(data: input_t) -> output_t:
    """Count each byte value into the output buffer, and return it."""
    data, output = data
    output[...] = torch.bincount(data, minlength=256)
    return output


def generate_input(size: int, contention: int, seed: int) -> input_t:
    """Random bytes; ``contention`` percent of them set to one value, so many updates hit one bin."""
    device = get_device()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    data = torch.randint(0, 256, (size,), device=device, dtype=torch.uint8, generator=gen)
    hot = torch.randint(0, 256, (), device=device, dtype=torch.uint8, generator=gen)
    forced = torch.rand((size,), device=device, dtype=torch.float32, generator=gen) < contention / 100.0
    data[forced] = hot
    output = torch.empty(256, device=device, dtype=torch.int64)
    return data.contiguous(), output


def check_implementation(data, output):
    expected = ref_kernel(data)
    reasons = verbose_allequal(output, expected)
    if reasons:
        return "mismatch found! custom implementation doesn't match reference: " + " ".join(reasons)
    return ""
