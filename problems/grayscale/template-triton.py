#!kernelrank requires cuda
"""grayscale in Triton: one program per block of pixels.

The skeleton runs but returns the red channel; make it the weighted sum.
Submit with: kernelrank submit template-triton.py --leaderboard grayscale
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def gray_kernel(rgb_ptr, gray_ptr, pixels, BLOCK: tl.constexpr):
    pixel = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = pixel < pixels
    r = tl.load(rgb_ptr + 3 * pixel, mask=mask)  # channels last: R, G, B sit next to each other
    # TODO: load G and B (offsets 1 and 2) and store 0.2989 * R + 0.5870 * G + 0.1140 * B
    tl.store(gray_ptr + pixel, r, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    rgb = data.contiguous()
    gray = torch.empty(rgb.shape[:2], dtype=torch.float32, device=rgb.device)
    block = 1024
    gray_kernel[(triton.cdiv(gray.numel(), block),)](rgb, gray, gray.numel(), BLOCK=block)
    return gray
