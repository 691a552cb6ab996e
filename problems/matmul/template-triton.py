#!kernelrank requires cuda
"""matmul in Triton: one program per (BLOCK_M, BLOCK_N) tile of C, walking k in steps of BLOCK_K.

The skeleton runs but only multiplies the first k-block; make it loop over all of k.
Submit with: kernelrank submit template-triton.py --leaderboard matmul
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(
        a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
        mask=(offs_m[:, None] < M) & (offs_k[None, :] < K),
        other=0.0,
    )
    b = tl.load(
        b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
        mask=(offs_k[:, None] < K) & (offs_n[None, :] < N),
        other=0.0,
    )
    # TODO: repeat the two loads for every k-block (advance offs_k by BLOCK_K) and accumulate the dots
    acc = tl.dot(a, b)  # float32 accumulator
    tl.store(
        c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
        acc.to(tl.bfloat16),
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty(m, n, dtype=torch.bfloat16, device=a.device)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
    matmul_kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=64,
        BLOCK_N=64,
        BLOCK_K=32,
    )
    return c
