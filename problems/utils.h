// Helpers shared by kernelrank's `lang: cu` problems, staged next to each reference as utils.h.
//
// The names follow the public GPU MODE CUDA format (TestReporter, CUDA_CHECK, ExitCodes), so references and
// submissions written for it compile. One difference: a failed CUDA call throws instead of exiting, so the
// harness reports it as a CUDA error with the call, file and line.
#ifndef KERNELRANK_UTILS_H
#define KERNELRANK_UTILS_H

#include <cuda_runtime.h>

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

enum ExitCodes : int {
    USAGE_ERROR = 2,
    EXIT_CUDA_API = 110,
    EXIT_PIPE_FAIL = 111,
    EXIT_TEST_FAIL = 112,
    EXIT_TEST_SPEC = 113,
};

inline void cuda_check_(cudaError_t status, const char* expr, const char* file, int line) {
    if (status != cudaSuccess) {
        std::ostringstream message;
        message << "CUDA error " << static_cast<int>(status) << " (" << cudaGetErrorString(status) << ") in "
                << expr << " at " << file << ":" << line;
        throw std::runtime_error(message.str());
    }
}

#define CUDA_CHECK(expr) cuda_check_((expr), #expr, __FILE__, __LINE__)

// An owning array in device memory (a kernelrank extension: problems whose data lives on the GPU, so the
// timed call is the kernel, not a copy over PCIe). Copies are deep copies on the device.
template <class T> class DeviceArray {
public:
    DeviceArray() = default;
    explicit DeviceArray(std::size_t size) : size_(size) {
        if (size_ > 0) CUDA_CHECK(cudaMalloc(&data_, size_ * sizeof(T)));
    }
    DeviceArray(const DeviceArray& other) : DeviceArray(other.size_) {
        if (size_ > 0) CUDA_CHECK(cudaMemcpy(data_, other.data_, size_ * sizeof(T), cudaMemcpyDeviceToDevice));
    }
    DeviceArray(DeviceArray&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    DeviceArray& operator=(DeviceArray other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        return *this;
    }
    ~DeviceArray() { cudaFree(data_); }

    T* data() { return data_; }
    const T* data() const { return data_; }
    std::size_t size() const { return size_; }

private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

// What check_implementation reports: pass() once, or fail() << "why" once.
class TestReporter {
public:
    void pass() { settle(PASS); }

    std::stringstream& fail() {
        settle(FAIL);
        return message_;
    }

    bool has_passed() const {
        if (state_ == NONE)
            throw std::logic_error("check_implementation neither passed nor failed the output; tell the "
                                   "problem's maintainers");
        return state_ == PASS;
    }

    template <class T> bool check_equal(const char* what, const T& value, const T& expected) {
        if (value == expected) return true;
        fail() << what << ": expected " << expected << ", got " << value;
        return false;
    }

    std::string message() const { return message_.str(); }

private:
    enum State { NONE, PASS, FAIL };

    void settle(State state) {
        if (state_ != NONE)
            throw std::logic_error("check_implementation reported a verdict twice; tell the problem's maintainers");
        state_ = state;
    }

    State state_ = NONE;
    std::stringstream message_;
};

#endif  // KERNELRANK_UTILS_H
