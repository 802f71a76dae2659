"""A package's public names imported on first use (PEP 562 module ``__getattr__``).

Used by :mod:`gpukit` (``import gpukit`` costs almost nothing) and
:mod:`gpukit.data` (its torch-free readers import without torch).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_names(package: str, homes: dict[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for the package ``package`` whose
    ``namespace`` (its ``globals()``) lacks the names of ``homes``, each mapped
    to the module that defines it (a name equal to that module's last part is
    the module itself). A name is imported at its first look-up and then
    stored in ``namespace``, so later look-ups bypass ``__getattr__``."""

    def __getattr__(name: str) -> Any:
        module_name = homes.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
