// vectoradd_cu: C = A + B for float16 matrices, correctly rounded to float16. Inputs are made and outputs
// checked on the GPU, so a fresh input per timed call costs microseconds, not seconds.
#ifndef VECTORADD_CU_REFERENCE_CUH
#define VECTORADD_CU_REFERENCE_CUH

#include <cstdint>
#include <sstream>

#include <cuda_fp16.h>

#include "task.h"
#include "utils.h"

namespace vectoradd_reference {

constexpr float TOLERANCE = 1e-3f;      // rtol = atol: one float16 ulp; a bfloat16 detour fails
constexpr int BLOCK = 256;

__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {    // splitmix64's finaliser
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__device__ inline float uniform01(std::uint64_t seed, std::uint64_t i) {
    return ((mix(seed ^ mix(i)) >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

// Normal values (Box-Muller on two counter-based uniforms) times scale.
__global__ void fill_normal(__half* out, std::size_t n, std::uint64_t seed, float scale) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        float u = uniform01(seed, 2 * i), v = uniform01(seed, 2 * i + 1);
        out[i] = __float2half(scale * sqrtf(-2.0f * logf(u)) * cospif(2.0f * v));
    }
}

__global__ void add(const __half* a, const __half* b, __half* c, std::size_t n) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        c[i] = __float2half(__half2float(a[i]) + __half2float(b[i]));      // exact in float32, one rounding
}

// Counts elements outside the tolerance (NaN counts) and keeps the lowest such index.
__global__ void compare(const __half* got, const __half* want, std::size_t n, unsigned long long* bad,
                        unsigned long long* first) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        float g = __half2float(got[i]), w = __half2float(want[i]);
        if (!(fabsf(g - w) <= TOLERANCE + TOLERANCE * fabsf(w))) {
            atomicAdd(bad, 1ull);
            atomicMin(first, static_cast<unsigned long long>(i));
        }
    }
}

inline unsigned blocks_for(std::size_t n) {
    std::size_t blocks = (n + BLOCK - 1) / BLOCK;
    return static_cast<unsigned>(blocks < 65535 * 32 ? (blocks > 0 ? blocks : 1) : 65535 * 32);
}

inline float scale_for(std::uint64_t seed, int which) {
    return 0.5f + 7.5f * ((mix(seed * 4 + which) >> 40) / 16777216.0f);    // in [0.5, 8)
}

}  // namespace vectoradd_reference

static input_t generate_input(int size, int seed) {
    using namespace vectoradd_reference;
    std::size_t n = std::size_t(size) * size;
    input_t data{size, DeviceArray<__half>(n), DeviceArray<__half>(n)};
    std::uint64_t key = mix(static_cast<std::uint64_t>(seed));
    fill_normal<<<blocks_for(n), BLOCK>>>(data.a.data(), n, key, scale_for(key, 0));
    fill_normal<<<blocks_for(n), BLOCK>>>(data.b.data(), n, mix(key), scale_for(key, 1));
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    return data;
}

static output_t ref_kernel(input_t data) {
    using namespace vectoradd_reference;
    std::size_t n = std::size_t(data.size) * data.size;
    output_t c(n);
    add<<<blocks_for(n), BLOCK>>>(data.a.data(), data.b.data(), c.data(), n);
    CUDA_CHECK(cudaGetLastError());
    return c;
}

static void check_implementation(TestReporter& reporter, input_t data, output_t out) {
    using namespace vectoradd_reference;
    std::size_t n = std::size_t(data.size) * data.size;
    if (out.size() != n) {
        reporter.fail() << "the output has " << out.size() << " elements; expected size * size = " << n;
        return;
    }
    output_t want = ref_kernel(data);
    DeviceArray<unsigned long long> counters(2);
    unsigned long long initial[2] = {0, ~0ull};
    CUDA_CHECK(cudaMemcpy(counters.data(), initial, sizeof initial, cudaMemcpyHostToDevice));
    compare<<<blocks_for(n), BLOCK>>>(out.data(), want.data(), n, counters.data(), counters.data() + 1);
    CUDA_CHECK(cudaGetLastError());
    unsigned long long found[2];
    CUDA_CHECK(cudaMemcpy(found, counters.data(), sizeof found, cudaMemcpyDeviceToHost));
    if (found[0] == 0) {
        reporter.pass();
        return;
    }
    __half got, expected;
    CUDA_CHECK(cudaMemcpy(&got, out.data() + found[1], sizeof got, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&expected, want.data() + found[1], sizeof expected, cudaMemcpyDeviceToHost));
    reporter.fail() << found[0] << " of " << n << " elements differ by more than " << TOLERANCE
                    << "; the first at row " << found[1] / data.size << ", column " << found[1] % data.size
                    << ": got " << __half2float(got) << ", expected " << __half2float(expected);
}

#endif
