// kernelrank's evaluation driver for `lang: cu` problems (docs/cuda.md).
//
// It replaces the problem's eval.cu: compiled with reference.cuh and the submission into one shared library,
// it only exposes the problem's functions and the submission's custom_kernel through a small C interface.
// The Python harness loads the library and drives it (harness/cu_module.py), so timing, statistics, checks,
// seeds and the result come from the same code as for Python submissions.
//
// Every entry returns 0 on success and 1 when the call threw; kr_last_error() then says what was thrown.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "utils.h"
#include "reference.cuh"

output_t custom_kernel(input_t data);

namespace kernelrank {

template <class F> struct parameters;
template <class R, class... A> struct parameters<R (*)(A...)> {
    using tuple = std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...>;
};
using Arguments = parameters<decltype(&generate_input)>::tuple;
static_assert(std::tuple_size_v<Arguments> == std::tuple_size_v<std::remove_cv_t<decltype(ArgumentNames)>>,
              "task.h's ArgumentNames must name every parameter of generate_input, in order");

template <class> inline constexpr bool unsupported = false;
thread_local std::string last_error;

template <class T> T parse(const char* text) {
    const std::string value(text);
    if constexpr (std::is_same_v<T, std::string>) {
        return value;
    } else if constexpr (std::is_same_v<T, bool>) {
        return value == "true" || value == "True" || value == "1";
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        long long parsed = std::stoll(value);
        if (parsed < std::numeric_limits<T>::min() || parsed > std::numeric_limits<T>::max())
            throw std::out_of_range("spec value " + value + " does not fit the parameter's type");
        return static_cast<T>(parsed);
    } else if constexpr (std::is_integral_v<T>) {
        unsigned long long parsed = std::stoull(value);
        if (parsed > std::numeric_limits<T>::max())
            throw std::out_of_range("spec value " + value + " does not fit the parameter's type");
        return static_cast<T>(parsed);
    } else if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(std::stod(value));
    } else {
        static_assert(unsupported<T>, "generate_input's parameters must be integers, floats, bools or std::string");
    }
}

template <std::size_t... I> input_t generate(const char* const* values, std::index_sequence<I...>) {
    Arguments arguments{parse<std::tuple_element_t<I, Arguments>>(values[I])...};
    return std::apply(generate_input, std::move(arguments));
}

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

extern "C" {

int kr_argument_count() { return static_cast<int>(ArgumentNames.size()); }

const char* kr_argument_name(int index) { return ArgumentNames[index]; }

const char* kr_last_error() { return kernelrank::last_error.c_str(); }

int kr_generate_input(const char* const* values, void** input) {
    return kernelrank::guarded([&] {
        *input = new input_t(kernelrank::generate(values, std::make_index_sequence<std::tuple_size_v<kernelrank::Arguments>>{}));
    });
}

int kr_copy_input(void* input, void** copy) {
    return kernelrank::guarded([&] { *copy = new input_t(*static_cast<input_t*>(input)); });
}

void kr_free_input(void* input) { delete static_cast<input_t*>(input); }

void kr_free_output(void* output) { delete static_cast<output_t*>(output); }

// The input is moved into custom_kernel, as GPU MODE's eval.cu does: a by-value parameter costs no copy.
int kr_custom_kernel(void* input, void** output) {
    return kernelrank::guarded([&] {
        *output = new output_t(custom_kernel(std::move(*static_cast<input_t*>(input))));
    });
}

int kr_check(void* input, void* output, int* passed, char* message, std::size_t capacity) {
    return kernelrank::guarded([&] {
        TestReporter reporter;
        check_implementation(reporter, *static_cast<input_t*>(input), *static_cast<output_t*>(output));
        *passed = reporter.has_passed() ? 1 : 0;
        const std::string text = reporter.message();
        std::size_t size = text.size() < capacity ? text.size() : capacity - 1;
        std::memcpy(message, text.data(), size);
        message[size] = '\0';
    });
}

}  // extern "C"
