"""Issue 25, the final red team's hidden alias, on CUDA: identity's input comes back as its output, and the runner is
made to forget which of its buffers the judge staged the input in, so its answer names that buffer as fresh output
memory. The judge would map it, copy it and see a correct output that shares nothing with its own copy of the input.
The defence: the judge maps a runner allocation once, at the same addresses, so output memory that is one of the
call's staged input buffers is recognised as that input, and identity's promise (outputs may not alias inputs)
refuses it; a part of one named as fresh memory is refused as tampering. The runner's dict is emptied in place: no
attribute is replaced, so the runner's guard sees nothing."""

import gc


def custom_kernel(data):
    for found in gc.get_objects():
        if type(found).__name__ == "Runner" and isinstance(getattr(found, "staged", None), dict):
            found.staged.clear()
    return data
