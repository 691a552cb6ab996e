import torch
from task import input_t, output_t
from utils import get_device


def ref_kernel(data: input_t) -> output_t:
    """The sum, reduced in float64 to be safe, as a 0-d float32 tensor."""
    x, _ = data
    return x.to(torch.float64).sum().to(torch.float32)


def generate_input(size: int, seed: int) -> input_t:
    """Normal values with a random scale and offset, so no fixed answer fits."""
    device = get_device()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    scale = 0.1 + 9.9 * torch.rand((), device=device, generator=gen).item()
    offset = -100 + 200 * torch.rand((), device=device, generator=gen).item()
    x = torch.randn(size, device=device, dtype=torch.float32, generator=gen) * scale + offset
    return x.contiguous(), torch.empty(1, device=device, dtype=torch.float32)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    x, _ = data
    if not isinstance(output, torch.Tensor) or output.numel() != 1:
        return False, f"expected a tensor holding one value, got {type(output).__name__} {getattr(output, 'shape', '')}"
    got = output.reshape(()).double()
    want = ref_kernel(data).double()
    tolerance = 1e-5 * x.double().abs().sum()
    if not bool(torch.abs(got - want) <= tolerance):
        return False, f"sum {got.item()} differs from the reference's {want.item()} by more than {tolerance.item():.3g}"
    return True, ""
