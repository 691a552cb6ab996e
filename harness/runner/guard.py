"""Tamper detection: what timing and checking rely on must still be what the harness bound.

The timer and the checker are bound before the submission is imported, so a patch changes no number;
the guard makes every patch a visible TAMPERING failure anyway. It remembers attributes of modules,
classes and objects (absent ones too, so a newly added override counts), and the code, defaults and
closure cells of every function among them, then compares after each call of the submission.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Any

_MISSING = object()


class Guard:
    def __init__(self) -> None:
        self._attributes: list[tuple[str, Mapping[str, Any], str, Any]] = []
        # label, function, and the parts a patch can swap while keeping the function's identity
        self._functions: dict[int, tuple[str, types.FunctionType, Any, Any, Any, tuple[Any, ...]]] = {}

    def watch(self, owner: Any, names: Iterable[str] | None = None, label: str | None = None) -> Guard:
        """Remember ``owner``'s attributes ``names`` (default: every public or private callable it holds)."""
        try:
            namespace = vars(owner)  # a live view: later assignments show up in it
        except TypeError:
            return self
        label = label or getattr(owner, "__name__", type(owner).__name__)
        if names is None:
            names = [n for n, v in list(namespace.items()) if not _dunder(n) and _is_code(v)]
        for name in names:
            value = namespace.get(name, _MISSING)
            self._attributes.append((f"{label}.{name}", namespace, name, value))
            self._remember_function(value)
        return self

    def watch_module(self, module: types.ModuleType) -> Guard:
        """Watch a module's functions and classes, and the methods of the classes it defines."""
        self.watch(module)
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                self.watch(value, label=f"{module.__name__}.{value.__qualname__}")
        return self

    def tampered(self) -> list[str]:
        """Names of everything replaced since it was watched; empty when nothing was (cheap: every call)."""
        changed = [
            label for label, namespace, name, value in self._attributes if namespace.get(name, _MISSING) is not value
        ]
        changed += [
            label
            for label, fn, code, defaults, kwdefaults, cells in self._functions.values()
            if fn.__code__ is not code
            or fn.__defaults__ is not defaults
            or fn.__kwdefaults__ is not kwdefaults
            or (cells and not _cells_unchanged(cells))
        ]
        return changed

    def _remember_function(self, value: Any) -> None:
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if isinstance(fn, types.FunctionType) and id(fn) not in self._functions:
            cells = tuple((cell, _cell_value(cell)) for cell in fn.__closure__ or ())
            self._functions[id(fn)] = (
                f"{fn.__module__}.{fn.__qualname__}",
                fn,
                fn.__code__,
                fn.__defaults__,
                fn.__kwdefaults__,
                cells,
            )


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _is_code(value: Any) -> bool:
    return callable(value) or isinstance(value, (staticmethod, classmethod))


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def _cells_unchanged(cells: tuple[tuple[types.CellType, Any], ...]) -> bool:
    """A closure's cells cannot be swapped, only their contents."""
    return all(_cell_value(cell) is value for cell, value in cells)
