"""Write-then-rename (pipebench.atomic): an output that appeared while it was written is never silently replaced.

Each check runs twice: with renameat2(RENAME_NOREPLACE), and with the fallback used where the kernel or
file system lacks it (the name reserved by mkdir / O_EXCL, then renamed onto).
"""
from __future__ import annotations

from pathlib import Path

import pytest

import pipebench.atomic as atomic
from pipebench.atomic import atomic_dir, atomic_write_bytes, rename_no_replace
from pipebench.errors import UsageError

APPEARED = r"appeared while this command wrote it \(another process\?\); nothing was written \(use --force"


@pytest.fixture(params=["renameat2", "reserve-then-rename"])
def rename_path(request, monkeypatch):
    """Run the test through renameat2, then through the fallback (as if libc had no renameat2)."""
    if request.param == "renameat2" and atomic._renameat2() is None:
        pytest.skip("this libc has no renameat2 (glibc < 2.28): only the fallback can run")
    if request.param != "renameat2":
        monkeypatch.setattr(atomic, "_renameat2", lambda: None)
    return request.param


def _other_writer(kind: str):
    """Give what another process leaves at the target while ours writes: a whole output, an empty folder, a file."""
    def make(target: Path) -> None:
        if kind == "file":
            target.write_text("theirs\n")
            return
        target.mkdir()
        if kind == "folder":
            (target / "manifest.json").write_text("theirs\n")
    return make


def _content(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): p.read_text() for p in path.rglob("*") if p.is_file()} if path.is_dir() \
        else {".": path.read_text()}


@pytest.mark.parametrize("kind", ["folder", "empty folder", "file"])
def test_a_target_that_appeared_meanwhile_is_refused_and_left_as_it_is(tmp_path, rename_path, kind):
    """Regression (issue 28): the final rename replaced an output another process finished meanwhile (and
    os.rename onto an empty folder succeeds), so two converts into one --out both said they wrote it."""
    target = tmp_path / "o"
    with pytest.raises(UsageError, match=rf"^{target}: {APPEARED}"):
        with atomic_dir(target) as tmp:
            (tmp / "manifest.json").write_text("ours\n")
            _other_writer(kind)(target)
    theirs = _content(target)
    assert theirs == ({} if kind == "empty folder" else {"manifest.json" if kind == "folder" else ".": "theirs\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"], "our temp folder was left behind"


def test_with_force_a_folder_that_appeared_meanwhile_is_replaced(tmp_path, rename_path):
    target = tmp_path / "o"
    with atomic_dir(target, force=True) as tmp:
        (tmp / "manifest.json").write_text("ours\n")
        _other_writer("folder")(target)
    assert _content(target) == {"manifest.json": "ours\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_rename_no_replace_refuses_an_empty_folder_and_a_file(tmp_path, rename_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    for existing in ("empty", "file"):
        with pytest.raises(FileExistsError):
            rename_no_replace(tmp_path / "src", tmp_path / existing)
    assert (tmp_path / "src").is_dir() and (tmp_path / "file").read_text() == "x"
    rename_no_replace(tmp_path / "src", tmp_path / "new")
    assert (tmp_path / "new").is_dir() and not (tmp_path / "src").exists()


def test_a_file_written_without_replace_refuses_one_that_appeared(tmp_path, rename_path, monkeypatch):
    """`pipelines export --out` without --force: the file another process wrote meanwhile stays."""
    target = tmp_path / "input_fn.py"
    made = atomic.tempfile.mkstemp

    def mkstemp_then_another_writer(*args, **kwargs):
        found = made(*args, **kwargs)
        target.write_text("theirs\n")  # after our check, before our rename
        return found

    monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp_then_another_writer)
    with pytest.raises(UsageError, match=rf"^{target}: {APPEARED}"):
        atomic_write_bytes(target, b"ours\n", replace=False)
    assert target.read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input_fn.py"]
    atomic_write_bytes(target, b"ours\n")
    assert target.read_text() == "ours\n"


def test_a_failed_write_names_the_file_it_was_writing_not_its_temp(tmp_path):
    """Regression (issue 28): errors of the temp named the temp (`.x.json.tmp-PID-HOST-...`), and a write's
    ENOSPC named nothing; the CLI's line then said `[Errno 28] No space left on device` alone."""
    target = tmp_path / "gone" / "x.json"
    with pytest.raises(FileNotFoundError) as raised:
        atomic_write_bytes(target, b"{}")
    assert raised.value.filename == str(target)
