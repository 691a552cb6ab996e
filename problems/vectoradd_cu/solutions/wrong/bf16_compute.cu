// Wrong: adds in bfloat16, whose 8-bit mantissa loses about three float16 ulps.
// expect: wrong_output | elements differ
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "task.h"
#include "utils.h"

__global__ void add_bf16(const __half* a, const __half* b, __half* c, std::size_t n) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        __nv_bfloat16 sum = __hadd(__float2bfloat16(__half2float(a[i])), __float2bfloat16(__half2float(b[i])));
        c[i] = __float2half(__bfloat162float(sum));
    }
}

output_t custom_kernel(input_t data) {
    std::size_t n = std::size_t(data.size) * data.size;
    output_t c(n);
    add_bf16<<<static_cast<unsigned>((n + 255) / 256), 256>>>(data.a.data(), data.b.data(), c.data(), n);
    CUDA_CHECK(cudaGetLastError());
    return c;
}
