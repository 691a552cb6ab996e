// kernelrank: a lang: cu problem's input_t and output_t as bytes and device buffers, so that they cross between
// the judge's process (cu_judge.cu: generate_input, check_implementation) and the runner's (cu_runner.cu:
// custom_kernel) without either trusting the other's memory (docs/cuda.md, "Two modules").
//
// A value is written in order: numbers, enums and host arrays as their bytes, sizes before what they size, and
// each buffer of GPU memory as one device segment. It is read back into a fresh value of the same type from
// memory the reader owns, with every size checked against what is left: a forged description throws, it never
// reads outside the bytes and segments it was given. Types: numbers, enums, bool, std::string, std::vector,
// std::array, std::pair, std::tuple, buffer classes (data(), size() and a constructor from a size, such as
// utils.h's DeviceArray: device or host memory, found out at run time) and aggregates of these (structs of up
// to 16 public fields, reflected through structured bindings).
#ifndef KERNELRANK_CU_VALUES_H
#define KERNELRANK_CU_VALUES_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

namespace kernelrank {

thread_local std::string last_error;  // what the last entry that returned 1 threw (kr_last_error)

// Every C entry runs its body through this: 0 on success, 1 when it threw (last_error says what).
template <class F> int guarded(F&& body) {
    try {
        body();
        return 0;
    } catch (const std::exception& error) {
        last_error = error.what();
    } catch (...) {
        last_error = "an exception that is not a std::exception";
    }
    return 1;
}

}  // namespace kernelrank

namespace kernelrank::values {

struct Packed {
    std::string host;                                          // everything but device memory, in order
    std::vector<std::pair<const void*, std::size_t>> device;  // the value's device buffers: where, how many bytes
};

struct Source {
    const char* host;
    std::size_t host_size;
    void* const* device;  // the reader's own copies of the device buffers
    const std::size_t* device_sizes;
    std::size_t device_count;
    std::size_t at = 0, next = 0;

    void take(void* out, std::size_t bytes) {
        if (host_size - at < bytes) throw std::runtime_error("the value's description ends too early");
        std::memcpy(out, host + at, bytes);
        at += bytes;
    }
    std::size_t count(std::size_t element_bytes) {  // a container's size, checked against the bytes left
        std::uint64_t n = 0;
        take(&n, sizeof n);
        if (element_bytes && n > (host_size - at) / element_bytes + device_count - next)
            throw std::runtime_error("the value's description names more elements than it holds");
        return static_cast<std::size_t>(n);
    }
    const void* segment(std::size_t bytes) {
        if (next >= device_count || device_sizes[next] != bytes)
            throw std::runtime_error("the value's device buffers do not match its description");
        return device[next++];
    }
};

inline void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline bool on_device(const void* pointer) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
        cudaGetLastError();  // host memory the runtime never saw: not an error to keep
        return false;
    }
    return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// ---- what a type is ---------------------------------------------------------------------------------------

template <class T> struct is_vector : std::false_type {};
template <class U, class A> struct is_vector<std::vector<U, A>> : std::true_type {};
template <class T> struct is_array : std::false_type {};
template <class U, std::size_t N> struct is_array<std::array<U, N>> : std::true_type {};
template <class T> struct is_tuple : std::false_type {};
template <class... U> struct is_tuple<std::tuple<U...>> : std::true_type {};
template <class A, class B> struct is_tuple<std::pair<A, B>> : std::true_type {};

template <class T> constexpr bool plain = std::is_arithmetic_v<T> || std::is_enum_v<T>;
// copied as bytes: numbers, and number classes such as __half (trivially copyable, not a struct to reflect)
template <class T>
constexpr bool bytes_only =
    plain<T> || (std::is_trivially_copyable_v<T> && !std::is_aggregate_v<T> && !std::is_pointer_v<T>);

template <class T>
concept buffer = requires(T& value, std::size_t n) {
    { value.data() } -> std::convertible_to<const void*>;
    { value.size() } -> std::convertible_to<std::size_t>;
    T(n);
} && std::is_trivially_copyable_v<std::remove_cvref_t<decltype(*std::declval<T&>().data())>> &&
                 !std::is_pointer_v<std::remove_cvref_t<decltype(*std::declval<T&>().data())>>;

struct any_field {
    template <class U> operator U() const;
};
template <class T, class... A>
concept braced = requires { T{std::declval<A>()...}; };
template <class T, class... A> constexpr std::size_t field_count() {
    if constexpr (sizeof...(A) > 16) return sizeof...(A);
    else if constexpr (braced<T, A..., any_field>) return field_count<T, A..., any_field>();
    else return sizeof...(A);
}

#define KR_FIELDS(...)                   \
    {                                    \
        auto& [__VA_ARGS__] = value;     \
        visit_all(visit, __VA_ARGS__);   \
    }
template <class V, class... F> void visit_all(V& visit, F&... fields) { (visit(fields), ...); }

template <class T, class V> void each_field(T& value, V&& visit) {
    constexpr std::size_t n = field_count<std::remove_const_t<T>>();
    static_assert(n <= 16, "kernelrank moves structs of at most 16 fields between processes");
    if constexpr (n == 1) KR_FIELDS(a)
    else if constexpr (n == 2) KR_FIELDS(a, b)
    else if constexpr (n == 3) KR_FIELDS(a, b, c)
    else if constexpr (n == 4) KR_FIELDS(a, b, c, d)
    else if constexpr (n == 5) KR_FIELDS(a, b, c, d, e)
    else if constexpr (n == 6) KR_FIELDS(a, b, c, d, e, f)
    else if constexpr (n == 7) KR_FIELDS(a, b, c, d, e, f, g)
    else if constexpr (n == 8) KR_FIELDS(a, b, c, d, e, f, g, h)
    else if constexpr (n == 9) KR_FIELDS(a, b, c, d, e, f, g, h, i)
    else if constexpr (n == 10) KR_FIELDS(a, b, c, d, e, f, g, h, i, j)
    else if constexpr (n == 11) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k)
    else if constexpr (n == 12) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k, l)
    else if constexpr (n == 13) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k, l, m)
    else if constexpr (n == 14) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k, l, m, o)
    else if constexpr (n == 15) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p)
    else if constexpr (n == 16) KR_FIELDS(a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q)
}
#undef KR_FIELDS

template <class> inline constexpr bool unsupported = false;

// ---- writing ----------------------------------------------------------------------------------------------

inline void put_bytes(Packed& out, const void* data, std::size_t bytes) {
    out.host.append(static_cast<const char*>(data), bytes);
}
inline void put_count(Packed& out, std::size_t n) {
    std::uint64_t count = n;
    put_bytes(out, &count, sizeof count);
}

template <class T> void put(Packed& out, const T& value) {
    if constexpr (bytes_only<T>) {
        put_bytes(out, &value, sizeof value);
    } else if constexpr (std::is_same_v<T, std::string>) {
        put_count(out, value.size());
        put_bytes(out, value.data(), value.size());
    } else if constexpr (is_vector<T>::value) {
        put_count(out, value.size());
        if constexpr (bytes_only<typename T::value_type> && !std::is_same_v<typename T::value_type, bool>)
            put_bytes(out, value.data(), value.size() * sizeof(typename T::value_type));
        else
            for (const auto& item : value) put(out, static_cast<typename T::value_type>(item));
    } else if constexpr (is_array<T>::value) {
        for (const auto& item : value) put(out, item);
    } else if constexpr (is_tuple<T>::value) {
        std::apply([&](const auto&... items) { (put(out, items), ...); }, value);
    } else if constexpr (buffer<T>) {
        const std::size_t bytes = value.size() * sizeof(*value.data());
        put_count(out, value.size());
        const bool device = bytes > 0 && on_device(value.data());
        put(out, device);
        if (device) out.device.emplace_back(value.data(), bytes);
        else put_bytes(out, value.data(), bytes);
    } else if constexpr (std::is_aggregate_v<T>) {
        each_field(value, [&](const auto& field) { put(out, field); });
    } else {
        static_assert(unsupported<T>, "kernelrank cannot move this type between the judge's and the runner's "
                                      "processes: use numbers, std::string, std::vector, std::array, std::tuple, "
                                      "buffer classes and structs of these (harness/builds/cu_values.h)");
    }
}

// ---- reading ----------------------------------------------------------------------------------------------

template <class T> void get(Source& in, T& value) {
    if constexpr (std::is_same_v<T, bool>) {
        unsigned char byte = 0;
        in.take(&byte, 1);
        if (byte > 1) throw std::runtime_error("the value's description holds a bool that is neither 0 nor 1");
        value = byte == 1;
    } else if constexpr (bytes_only<T>) {
        in.take(&value, sizeof value);
    } else if constexpr (std::is_same_v<T, std::string>) {
        value.resize(in.count(1));
        in.take(value.data(), value.size());
    } else if constexpr (is_vector<T>::value) {
        using U = typename T::value_type;
        if constexpr (bytes_only<U> && !std::is_same_v<U, bool>) {
            value.resize(in.count(sizeof(U)));
            in.take(value.data(), value.size() * sizeof(U));
        } else {
            const std::size_t n = in.count(1);
            value.clear();
            value.reserve(n);
            for (std::size_t i = 0; i < n; ++i) {
                U item{};
                get(in, item);
                value.push_back(std::move(item));
            }
        }
    } else if constexpr (is_array<T>::value) {
        for (auto& item : value) get(in, item);
    } else if constexpr (is_tuple<T>::value) {
        std::apply([&](auto&... items) { (get(in, items), ...); }, value);
    } else if constexpr (buffer<T>) {
        using U = std::remove_cvref_t<decltype(*value.data())>;
        const std::size_t n = in.count(0);
        bool device = false;
        get(in, device);
        if (n > SIZE_MAX / sizeof(U)) throw std::runtime_error("the value's description names too large a buffer");
        const void* from = device ? in.segment(n * sizeof(U)) : nullptr;
        if (!device && n > (in.host_size - in.at) / sizeof(U))
            throw std::runtime_error("the value's description names more elements than it holds");
        value = T(n);
        if (n == 0) return;
        if (device) {
            check_cuda(cudaMemcpy(value.data(), from, n * sizeof(U), cudaMemcpyDefault), "copying a buffer");
        } else if (on_device(value.data())) {
            check_cuda(cudaMemcpy(value.data(), in.host + in.at, n * sizeof(U), cudaMemcpyDefault), "copying a buffer");
            in.at += n * sizeof(U);
        } else {
            in.take(value.data(), n * sizeof(U));
        }
    } else if constexpr (std::is_aggregate_v<T>) {
        each_field(value, [&](auto& field) { get(in, field); });
    } else {
        static_assert(unsupported<T>, "kernelrank cannot move this type between processes (cu_values.h)");
    }
}

template <class T> T read(Source& in) {
    T value{};
    get(in, value);
    if (in.at != in.host_size || in.next != in.device_count)
        throw std::runtime_error("the value's description holds more than the value");
    return value;
}

}  // namespace kernelrank::values

// The C entries both modules share: the last error, a packed value's parts, and reading a value back.
#define KERNELRANK_SHARED_ENTRIES                                                                                  \
    const char* kr_last_error() { return kernelrank::last_error.c_str(); }                                       \
    std::size_t kr_packed_host_size(void* packed) {                                                              \
        return static_cast<kernelrank::values::Packed*>(packed)->host.size();                                     \
    }                                                                                                             \
    const char* kr_packed_host(void* packed) { return static_cast<kernelrank::values::Packed*>(packed)->host.data(); } \
    std::size_t kr_packed_segments(void* packed) {                                                                \
        return static_cast<kernelrank::values::Packed*>(packed)->device.size();                                   \
    }                                                                                                             \
    std::size_t kr_packed_segment_size(void* packed, std::size_t index) {                                         \
        return static_cast<kernelrank::values::Packed*>(packed)->device.at(index).second;                          \
    }                                                                                                             \
    int kr_packed_copy(void* packed, std::size_t index, void* into) {                                             \
        return kernelrank::guarded([&] {                                                                          \
            const auto& [from, bytes] = static_cast<kernelrank::values::Packed*>(packed)->device.at(index);       \
            kernelrank::values::check_cuda(cudaMemcpy(into, from, bytes, cudaMemcpyDeviceToDevice), "copying out"); \
        });                                                                                                       \
    }                                                                                                             \
    void kr_free_packed(void* packed) { delete static_cast<kernelrank::values::Packed*>(packed); }               \
    void kr_free_input(void* input) { delete static_cast<input_t*>(input); }                                    \
    void kr_free_output(void* output) { delete static_cast<output_t*>(output); }                                \
    int kr_read_input(const char* host, std::size_t size, void* const* device, const std::size_t* sizes,          \
                      std::size_t count, void** input) {                                                          \
        return kernelrank::guarded([&] {                                                                          \
            kernelrank::values::Source source{host, size, device, sizes, count};                                  \
            *input = std::make_unique<input_t>(kernelrank::values::read<input_t>(source)).release();                                      \
        });                                                                                                       \
    }                                                                                                             \
    int kr_read_output(const char* host, std::size_t size, void* const* device, const std::size_t* sizes,         \
                       std::size_t count, void** output) {                                                        \
        return kernelrank::guarded([&] {                                                                          \
            kernelrank::values::Source source{host, size, device, sizes, count};                                  \
            *output = std::make_unique<output_t>(kernelrank::values::read<output_t>(source)).release();                                   \
        });                                                                                                       \
    }                                                                                                             \
    int kr_pack_input(void* input, void** packed) {                                                               \
        return kernelrank::guarded([&] {                                                                          \
            auto made = std::make_unique<kernelrank::values::Packed>();                                           \
            kernelrank::values::put(*made, *static_cast<input_t*>(input));                                        \
            *packed = made.release();                                                                             \
        });                                                                                                       \
    }                                                                                                             \
    int kr_pack_output(void* output, void** packed) {                                                             \
        return kernelrank::guarded([&] {                                                                          \
            auto made = std::make_unique<kernelrank::values::Packed>();                                           \
            kernelrank::values::put(*made, *static_cast<output_t*>(output));                                      \
            *packed = made.release();                                                                             \
        });                                                                                                       \
    }

#endif
