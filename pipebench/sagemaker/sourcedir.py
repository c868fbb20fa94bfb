"""sourcedir.tar.gz: pipebench as script-mode source for SageMaker's TensorFlow training images.

The SageMaker training toolkit in those images downloads the tarball that the
`sagemaker_submit_directory` hyperparameter names into /opt/ml/code, runs
`python -m pip install -r requirements.txt` there, then `python <sagemaker_program> --hp value ...`
with /opt/ml/code as its working folder. The tarball holds:
  pipebench_entry.py   the program: calls pipebench.sagemaker.entry.main (the arguments are ignored:
                       the entry reads hyperparameters.json itself)
  pipebench/           the package as this installation has it (no setup.py: with one the
                       toolkit would run the folder as a package, `python -m`, instead of the program)
  requirements.txt     pipebench's own requirements (its installed metadata, extras left out); the
                       image already has TensorFlow, which pip must not replace
Nothing is read from the network and no TensorFlow is imported.
"""
from __future__ import annotations

import importlib.metadata
import io
import tarfile
from pathlib import Path

import pipebench
from pipebench.errors import UsageError

ENTRY_PROGRAM = "pipebench_entry.py"
REQUIREMENTS = "requirements.txt"
TARBALL = "sourcedir.tar.gz"
PACKAGES = (pipebench,)

ENTRY_SCRIPT = '''"""SageMaker script mode: the training toolkit runs this file in /opt/ml/code."""
import sys

from pipebench.sagemaker.entry import main

sys.exit(main())
'''


def requirements(tf_version: str) -> str:
    """Give requirements.txt: pipebench's requirements without extras, and numpy < 2 where TF needs it.

    TensorFlow before 2.18 is built against NumPy 1; pip does not re-check the packages it leaves
    alone, so a requirement that pulled NumPy 2 in would break the image's TensorFlow unnoticed.
    """
    try:
        required = importlib.metadata.requires("pipebench") or []
    except importlib.metadata.PackageNotFoundError:
        raise UsageError("script mode ships pipebench's requirements from its installed metadata; install "
                         "pipebench (pip install -e .) or give --image-uri") from None
    lines = [r for r in required if "extra ==" not in r]
    major, minor = (int(p) for p in tf_version.split(".")[:2])
    if (major, minor) < (2, 18):
        lines.append("numpy<2")
    return "".join(f"{line}\n" for line in lines)


def source_files() -> list[tuple[Path, str]]:
    """Give (local file, name in the tarball) for each file of the shipped packages, caches left out."""
    files = []
    for package in PACKAGES:
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root.parent)
            if path.is_file() and "__pycache__" not in relative.parts and path.suffix not in (".pyc", ".pyo"):
                files.append((path, relative.as_posix()))
    return files


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def build_tarball(tf_version: str) -> bytes:
    """Give sourcedir.tar.gz's bytes: the entry program, requirements.txt and the packages' files."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        _add(tar, ENTRY_PROGRAM, ENTRY_SCRIPT.encode())
        _add(tar, REQUIREMENTS, requirements(tf_version).encode())
        for path, name in source_files():
            _add(tar, name, path.read_bytes())
    return buffer.getvalue()
