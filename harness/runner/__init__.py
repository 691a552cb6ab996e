"""The untrusted side: everything that runs in the runner, the one process of an evaluation that holds the
submission. It imports the shared modules, ``isolation`` (its seccomp filter) and ``builds`` (asking for a
build), and nothing of ``judge`` or ``host``: a runner module that reached the judge's code would let the
submission read or patch it (tests/test_architecture.py enforces this)."""
