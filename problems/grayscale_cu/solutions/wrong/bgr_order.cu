// Wrong: reads the channels as BGR, swapping the weights of red and blue.
// expect: wrong_output | pixels differ
#include "task.h"
#include "utils.h"

__global__ void grayscale_kernel(const float* rgb, float* gray, std::size_t pixels) {
    std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pixels) gray[i] = 0.1140f * rgb[3 * i] + 0.5870f * rgb[3 * i + 1] + 0.2989f * rgb[3 * i + 2];
}

output_t custom_kernel(input_t data) {
    std::size_t pixels = std::size_t(data.size) * data.size;
    output_t gray(pixels);
    grayscale_kernel<<<static_cast<unsigned>((pixels + 255) / 256), 256>>>(data.rgb.data(), gray.data(), pixels);
    CUDA_CHECK(cudaGetLastError());
    return gray;
}
