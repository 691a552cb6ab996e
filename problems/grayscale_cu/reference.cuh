// grayscale_cu: Y = 0.2989 R + 0.5870 G + 0.1140 B, checked against a float64 computation on the GPU.
#ifndef GRAYSCALE_CU_REFERENCE_CUH
#define GRAYSCALE_CU_REFERENCE_CUH

#include <cstdint>

#include "task.h"
#include "utils.h"

namespace grayscale_reference {

// A float32 weighted sum of three terms errs by a few ulps (~3e-7); 1e-5 rejects a float16 detour (~5e-4).
constexpr double RTOL = 1e-5, ATOL = 1e-6;
constexpr int BLOCK = 256;

__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {    // splitmix64's finaliser
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__global__ void fill_uniform(float* out, std::size_t n, std::uint64_t seed, float gain) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        out[i] = gain * ((mix(seed ^ mix(i)) >> 40) * (1.0f / 16777216.0f));
}

__global__ void compare(const float* rgb, const float* got, std::size_t pixels, unsigned long long* bad,
                        unsigned long long* first) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pixels; i += std::size_t(gridDim.x) * blockDim.x) {
        double want = 0.2989 * rgb[3 * i] + 0.5870 * rgb[3 * i + 1] + 0.1140 * rgb[3 * i + 2];
        if (!(fabs(double(got[i]) - want) <= ATOL + RTOL * fabs(want))) {
            atomicAdd(bad, 1ull);
            atomicMin(first, static_cast<unsigned long long>(i));
        }
    }
}

inline unsigned blocks_for(std::size_t n) {
    std::size_t blocks = (n + BLOCK - 1) / BLOCK;
    return static_cast<unsigned>(blocks < 65535 * 32 ? (blocks > 0 ? blocks : 1) : 65535 * 32);
}

}  // namespace grayscale_reference

static input_t generate_input(int size, int seed) {
    using namespace grayscale_reference;
    std::size_t n = std::size_t(size) * size * 3;
    input_t data{size, DeviceArray<float>(n)};
    std::uint64_t key = mix(static_cast<std::uint64_t>(seed));
    float gain = 0.5f + 1.5f * ((mix(key) >> 40) / 16777216.0f);
    fill_uniform<<<blocks_for(n), BLOCK>>>(data.rgb.data(), n, key, gain);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    return data;
}

// The reference's answer is computed inside check_implementation, in float64, pixel by pixel.
static void check_implementation(TestReporter& reporter, input_t data, output_t out) {
    using namespace grayscale_reference;
    std::size_t pixels = std::size_t(data.size) * data.size;
    if (out.size() != pixels) {
        reporter.fail() << "the output has " << out.size() << " values; expected size * size = " << pixels;
        return;
    }
    DeviceArray<unsigned long long> counters(2);
    unsigned long long initial[2] = {0, ~0ull};
    CUDA_CHECK(cudaMemcpy(counters.data(), initial, sizeof initial, cudaMemcpyHostToDevice));
    compare<<<blocks_for(pixels), BLOCK>>>(data.rgb.data(), out.data(), pixels, counters.data(), counters.data() + 1);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long found[2];
    CUDA_CHECK(cudaMemcpy(found, counters.data(), sizeof found, cudaMemcpyDeviceToHost));
    if (found[0] == 0) {
        reporter.pass();
        return;
    }
    float got;
    CUDA_CHECK(cudaMemcpy(&got, out.data() + found[1], sizeof got, cudaMemcpyDeviceToHost));
    reporter.fail() << found[0] << " of " << pixels << " pixels differ by more than rtol " << RTOL << ", atol " << ATOL
                    << "; the first at row " << found[1] / data.size << ", column " << found[1] % data.size
                    << ": got " << got;
}

#endif
