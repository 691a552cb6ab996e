"""kernelrank's version, kept here alone: ``pyproject.toml`` reads it, ``kernelrank --version`` and ``/v1/health``
show it, and CHANGELOG.md says what each one changed."""

__version__ = "0.2.0"
