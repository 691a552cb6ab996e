import torch
from task import input_t, output_t
from utils import get_device


def ref_kernel(data: input_t) -> output_t:
    """LAPACK's compact QR: a torch.return_types.geqrf named tuple (H, tau)."""
    return torch.geqrf(data)


def generate_input(m: int, n: int, seed: int) -> input_t:
    """A well-conditioned random matrix: normal values plus a multiple of the identity's top block."""
    device = get_device()
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn(m, n, device=device, dtype=torch.float32, generator=gen)
    a[:n] += n**0.5 * torch.eye(n, device=device)
    return a.contiguous()


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    if not isinstance(output, tuple) or len(output) != 2:
        return False, f"output must be a tuple (H, tau), got {type(output).__name__}"
    h, tau = output
    m, n = data.shape
    if not (isinstance(h, torch.Tensor) and isinstance(tau, torch.Tensor)):
        return False, "output must be a tuple (H, tau) of tensors"
    if tuple(h.shape) != (m, n) or tuple(tau.shape) != (n,):
        return False, f"H must be {m}x{n} and tau of length {n}, got {tuple(h.shape)} and {tuple(tau.shape)}"
    h64, tau64, a64 = h.double(), tau.double(), data.double()
    q = torch.linalg.householder_product(h64, tau64)
    r = torch.triu(h64[:n])
    residual = (torch.linalg.norm(q @ r - a64) / torch.linalg.norm(a64)).item()
    orthogonality = torch.linalg.norm(q.T @ q - torch.eye(n, device=q.device, dtype=q.dtype)).item()
    if not residual <= 1e-4:
        return False, f"Q R differs from A by {residual:.3g} (relative), more than 1e-4"
    if not orthogonality <= 1e-3:
        return False, f"Q is not orthogonal: |Q^T Q - I| = {orthogonality:.3g}"
    return True, ""
