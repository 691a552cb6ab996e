"""Compiling submissions: ``.cu`` files and ``load_inline`` extensions, built in a sandboxed child of the harness
server (``builder``), never in a submission's process, behind a content-addressed cache. Imports the shared
modules and ``isolation`` only."""
