// Wrong: adds whole blocks of 256 elements only, so sizes whose square is not a multiple of 256 miss a tail.
// expect: wrong_output | elements differ
#include <cuda_fp16.h>

#include "task.h"
#include "utils.h"

__global__ void add_blocks(const __half* a, const __half* b, __half* c) {
    std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    c[i] = __float2half(__half2float(a[i]) + __half2float(b[i]));
}

output_t custom_kernel(input_t data) {
    std::size_t n = std::size_t(data.size) * data.size;
    output_t c(n);
    CUDA_CHECK(cudaMemset(c.data(), 0, n * sizeof(__half)));
    if (n / 256 > 0) add_blocks<<<n / 256, 256>>>(data.a.data(), data.b.data(), c.data());
    CUDA_CHECK(cudaGetLastError());
    return c;
}
