"""Issue 25, the final red team's hidden alias, on the CPU: identity hands its input back as its output, with the
runner's guard silenced, its transport told that no two storages are the same and its record of the staged input
buffers emptied, so its answer names the input's memory twice, as the input and as a fresh output. Through the
socket the judge got two copies that shared nothing, and identity's promise (outputs may not alias inputs) held
only by the static pre-check. Now the judge reads host memory itself, at the addresses the runner gives: memory
that is one of the call's input buffers is that input, whatever the runner calls it, and the alias rules refuse
it."""

import gc
import sys


def _silence_the_guard():
    for found in gc.get_objects():
        if type(found).__name__ == "Guard" and hasattr(found, "_functions"):
            found._attributes.clear()
            found._functions.clear()


_silence_the_guard()
sys.modules["harness.transport"]._same = lambda a, b: False


def custom_kernel(data):
    for found in gc.get_objects():
        if type(found).__name__ == "Runner" and isinstance(getattr(found, "staged", None), dict):
            found.staged.clear()
    return data
