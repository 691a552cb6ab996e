// kernelrank's runner module for `lang: cu` problems (docs/cuda.md, "Two modules").
//
// Compiled with the submission and the problem's types (task.h, utils.h), never with the judge's module: the
// runner process loads it, rebuilds each call's input_t from the bytes and device buffers the judge sent, calls
// custom_kernel and packs the output_t it returned for the judge (kernelrank_values.h, harness/builds/
// cu_values.h). Every entry that can fail returns 0 on success and 1 when the call threw; kr_last_error() says what.
#include <memory>
#include <utility>

#include "utils.h"
#include "task.h"
#include "kernelrank_values.h"

output_t custom_kernel(input_t data);

extern "C" {

KERNELRANK_SHARED_ENTRIES

// The input is moved into custom_kernel, as GPU MODE's eval.cu does: a by-value parameter costs no copy.
int kr_custom_kernel(void* input, void** output) {
    return kernelrank::guarded([&] {
        *output = std::make_unique<output_t>(custom_kernel(std::move(*static_cast<input_t*>(input)))).release();
    });
}

}  // extern "C"
