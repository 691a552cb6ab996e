// kernelrank's judge module for `lang: cu` problems (docs/cuda.md, "Two modules").
//
// It replaces the problem's eval.cu on the judge's side: compiled with reference.cuh alone (never with the
// submission), it exposes generate_input and check_implementation through a small C interface, and moves
// input_t and output_t in and out of the bytes and device buffers that cross to the runner (kernelrank_values.h,
// harness/builds/cu_values.h). The submission is built into another module, cu_runner.cu, run by the runner.
// The Python harness drives both (harness/cu_abi.py), so timing, statistics, checks, seeds and the result come
// from the same code as for Python submissions.
//
// Every entry that can fail returns 0 on success and 1 when the call threw; kr_last_error() then says what.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "utils.h"
#include "reference.cuh"
#include "kernelrank_values.h"

namespace kernelrank {

template <class F> struct parameters;
template <class R, class... A> struct parameters<R (*)(A...)> {
    using tuple = std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...>;
};
using Arguments = parameters<decltype(&generate_input)>::tuple;
static_assert(std::tuple_size_v<Arguments> == std::tuple_size_v<std::remove_cv_t<decltype(ArgumentNames)>>,
              "task.h's ArgumentNames must name every parameter of generate_input, in order");

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
        static_assert(values::unsupported<T>, "generate_input's parameters must be integers, floats, bools or std::string");
    }
}

template <std::size_t... I> input_t generate(const char* const* values, std::index_sequence<I...>) {
    Arguments arguments{parse<std::tuple_element_t<I, Arguments>>(values[I])...};
    return std::apply(generate_input, std::move(arguments));
}

}  // namespace kernelrank

extern "C" {

KERNELRANK_SHARED_ENTRIES

int kr_argument_count() { return static_cast<int>(ArgumentNames.size()); }

const char* kr_argument_name(int index) { return ArgumentNames[index]; }

int kr_generate_input(const char* const* values, void** input) {
    return kernelrank::guarded([&] {
        *input = std::make_unique<input_t>(kernelrank::generate(values, std::make_index_sequence<std::tuple_size_v<kernelrank::Arguments>>{})).release();
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
