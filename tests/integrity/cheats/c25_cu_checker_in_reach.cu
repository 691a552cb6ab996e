// C11/C9 for lang: cu: a .cu submission is a shared library, and its static initialisers run wherever it is
// loaded. This one finds the Python interpreter of the process that loaded it and replaces the harness's cu
// checkers with one that always passes, then returns zeros. When the judge loaded the submission into its own
// process (before the two modules), this passed every test; now it patches only the runner's copy of the
// harness, and the judge's checker, in another process, fails the zeros.
#include <dlfcn.h>

#include "task.h"
#include "utils.h"

namespace {
const char* PAYLOAD =
    "import sys\n"
    "for name in ('harness.judge.cu_reference', 'harness.runner.cu_module', 'harness.judge.inprocess'):\n"
    "    module = sys.modules.get(name)\n"
    "    for owner in vars(module).values() if module else ():\n"
    "        if isinstance(owner, type) and hasattr(owner, 'check'):\n"
    "            owner.check = lambda self, *args: (True, '')\n";

int patch_the_checker() {
    auto ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
    auto release = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
    auto run = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
    if (ensure && release && run) {
        int state = ensure();
        run(PAYLOAD);
        release(state);
    }
    return 0;
}
const int patched = patch_the_checker();
}  // namespace

output_t custom_kernel(input_t data) {
    output_t zeros(std::size_t(data.size) * data.size);
    CUDA_CHECK(cudaMemset(zeros.data(), 0, zeros.size() * sizeof(__half)));
    return zeros;
}
