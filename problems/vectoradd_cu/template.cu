// vectoradd in CUDA: C = A + B for two size x size float16 matrices on the GPU.
// Submit with: kernelrank submit template.cu --leaderboard vectoradd_cu
#include <cuda_fp16.h>

#include "task.h"
#include "utils.h"

__global__ void add_kernel(const __half* a, const __half* b, __half* c, std::size_t n) {
    // write your kernel here
}

output_t custom_kernel(input_t data) {
    std::size_t n = std::size_t(data.size) * data.size;
    output_t c(n);          // DeviceArray<__half>: size * size elements on the GPU
    add_kernel<<<(n + 255) / 256, 256>>>(data.a.data(), data.b.data(), c.data(), n);
    CUDA_CHECK(cudaGetLastError());
    return c;
}
