import torch
from task import input_t, output_t


def generate_input(rows: int, cols: int, seed: int) -> input_t:
    """Host data: a CPU generator and CPU tensors, whatever GPU the evaluation runs on."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, dtype=torch.float32)
    alpha = 0.01 + 0.2 * torch.rand((), generator=gen).item()
    return x, alpha


def ref_kernel(data: input_t) -> output_t:
    x, alpha = data
    return torch.where(x > 0, x, alpha * x)


def check_implementation(data: input_t, output: output_t) -> bool:
    expected = ref_kernel(data)
    if output.shape != expected.shape:
        print(f"shape {tuple(output.shape)} is not {tuple(expected.shape)}")
        return False
    too_far = (output - expected).abs() > 1e-6 + 1e-5 * expected.abs()
    if too_far.any():
        print(f"{int(too_far.sum())} elements differ from the reference")
        return False
    return True
