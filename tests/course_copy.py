"""A temporary copy of the repository, to change as a course author would without touching this one.

copy_repository(folder): the files git tracks or would track (`git ls-files`: no build output, no
ignored file), as the working tree has them, in a git repository of their own (one commit, as an
instructor's clone has), and a symlink to this checkout's .venv (nothing is installed again).
`python(copy, ...)` runs a module of the copy: its own course/, helpers/ and autograde/ come first
on the path (the .venv's editable install points at this checkout), for the command and every
kernel it starts. The model cache is the shared one (helpers.cache), read only.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from course.paths import ROOT


def copy_repository(folder):
    """A copy of the repository's files in `folder`; return its path."""
    folder = Path(folder)
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree but not in git is left out
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)  # the times too: make's targets stay up to date
    (folder / ".venv").symlink_to(ROOT / ".venv")
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "the course as cloned")
    return folder


def git(folder, *arguments):
    return subprocess.run(["git", "-c", "user.name=author", "-c", "user.email=author@example.org", *arguments],
                          cwd=folder, capture_output=True, text=True, check=True).stdout


def environment(copy):
    """This process's environment, with the copy's packages first on the path of every Python it starts."""
    return {**os.environ, "PYTHONPATH": str(copy)}


def python(copy, *arguments, timeout=600):
    """`python -m ...` (or any arguments) in the copy; the CompletedProcess, output as text."""
    return subprocess.run([sys.executable, *arguments], cwd=copy, env=environment(copy), capture_output=True,
                          text=True, timeout=timeout)


def edit(path, old, new, count=1):
    """Replace `old` by `new` in the file at `path`, `count` times exactly (an edit that finds
    nothing to change fails here, not later)."""
    text = Path(path).read_text()
    assert text.count(old) == count, f"{path}: {old!r} occurs {text.count(old)} times, not {count}"
    Path(path).write_text(text.replace(old, new))
