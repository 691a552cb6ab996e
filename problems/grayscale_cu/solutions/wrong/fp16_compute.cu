// Wrong: computes in float16, whose 11-bit mantissa errs by about 5e-4, far outside rtol 1e-5.
// expect: wrong_output | pixels differ
#include <cuda_fp16.h>

#include "task.h"
#include "utils.h"

__global__ void grayscale_kernel(const float* rgb, float* gray, std::size_t pixels) {
    std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pixels) return;
    __half y = __hadd(__hadd(__hmul(__float2half(0.2989f), __float2half(rgb[3 * i])),
                             __hmul(__float2half(0.5870f), __float2half(rgb[3 * i + 1]))),
                      __hmul(__float2half(0.1140f), __float2half(rgb[3 * i + 2])));
    gray[i] = __half2float(y);
}

output_t custom_kernel(input_t data) {
    std::size_t pixels = std::size_t(data.size) * data.size;
    output_t gray(pixels);
    grayscale_kernel<<<static_cast<unsigned>((pixels + 255) / 256), 256>>>(data.rgb.data(), gray.data(), pixels);
    CUDA_CHECK(cudaGetLastError());
    return gray;
}
