"""Names imported on first use, so that collecting a test file imports no TensorFlow (tests/conftest.py):
`tf = lazy("tensorflow")` or `build = lazy("pipebench.measure.build", "build")` at the top of a test file, used
inside its `tf` tests."""
from __future__ import annotations

import importlib
import types


class _Module(types.ModuleType):
    """A module that imports itself at its first attribute read (Optuna's `_LazyImport`)."""

    def __getattr__(self, name: str):
        if name.startswith("_"):  # what collectors and inspectors probe for; the tests read public names
            raise AttributeError(name)
        return getattr(importlib.import_module(self.__name__), name)


def lazy(module: str, attribute: str | None = None):
    """Give `module`, or the callable `module.attribute`, imported when first used."""
    if attribute is None:
        return _Module(module)

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), attribute)(*args, **kwargs)

    call.__name__ = call.__qualname__ = attribute
    return call
