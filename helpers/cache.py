"""Where the course's default tokenizer and model are kept, and how a cache folder is built.

A module of its own, without torch: the grader finds the cache without paying for torch's import.
"""
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

# Bump when the default tokenizer or model changes, so old caches are not used.
DEFAULT_VERSION = "v14"


def cache_dir():
    """Where the default tokenizer and model live; set COURSE_CACHE to move it."""
    default = Path.home() / ".cache" / "efficient-training-course"
    return Path(os.environ.get("COURSE_CACHE", default)) / DEFAULT_VERSION


def build_once(folder, build):
    """Run `build(tmp)` into a temporary folder, then rename it into place.

    The rename is atomic, so parallel processes (tests, graders, lessons side by side) never see
    half a folder; and a lock beside it makes them wait for the one that builds, instead of each
    building it again (the model's pre-training takes minutes).
    """
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder.is_dir():  # built by the process we waited for
            return folder
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
        try:
            build(tmp)
            _open_like_new_files(tmp)
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _open_like_new_files(folder):
    """Give `folder` and all in it the modes of a new folder and new files (umask applied).

    Other users read the cache (an instructor's graders, CI's unprivileged run), but mkdtemp makes
    the folder private (0700) and safetensors writes model.safetensors private (0600).
    """
    mask = os.umask(0)  # the only way to read the umask is to set it
    os.umask(mask)
    for path in [folder, *folder.rglob("*")]:
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)
