"""The public names of a package, each imported from its module when first used (PEP 562).

A package lists ``{module: (name, ...)}``; ``import dkernel.gram`` then
imports none of its modules, and ``dkernel.gram.GramMatrix`` imports only
the module that defines it (and what that module needs). This keeps
``import dkernel`` free of Dask's array module, zarr and distributed,
and a fit in memory free of the zarr store.
"""

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(package, exports):
    """``(__getattr__, __dir__, __all__)`` of the package ``package`` for its ``{module: names}`` ``exports``.

    ``module`` is relative to the package (``"._matrix"``). A subpackage or
    submodule of the package is imported by its name too (``dkernel.gram``).
    """
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name):
        module = module_of.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
        elif not name.startswith("__"):
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        importlib.import_module(package).__dict__[name] = value
        return value

    def __dir__():
        return sorted(set(importlib.import_module(package).__dict__) | set(module_of))

    return __getattr__, __dir__, sorted(module_of)
