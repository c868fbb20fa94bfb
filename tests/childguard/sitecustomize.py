"""Imported at start-up by the Python processes a test not marked `tf` starts (tests/conftest.py puts this
folder first on their PYTHONPATH): a process that imports TensorFlow is noted in $PIPEBENCH_TEST_TF_NOTES,
so the test fails saying it needs the `tf` mark. It only notes; the process runs as it would have."""
import os
import sys

_NOTES = os.environ.get("PIPEBENCH_TEST_TF_NOTES")


class _Noting:
    """The loader of `tensorflow`, which notes the import before it runs it (a bare find_spec is no import)."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        with open(_NOTES, "a") as notes:
            notes.write(f"pid {os.getpid()}: {' '.join(sys.argv)[:300]}\n")
        self._loader.exec_module(module)


class _TensorFlowNoter:
    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Noting(spec.loader)
        return spec


if _NOTES:
    sys.meta_path.insert(0, _TensorFlowNoter())
