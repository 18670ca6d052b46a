"""The course's model cache (helpers.cache): built once where missing, for the grader and the hub.

Kernels never pre-train: the grader (course/grade.py, as `python -m autograde --cache`) and the hub
(course/hub.py) give them a read-only copy of this folder through COURSE_CACHE.
"""
import subprocess
import sys

from helpers.cache import cache_dir  # without torch

from .paths import ROOT


# The tokenizer, the model, and lesson 8's answer to "does bitsandbytes run here?", which a kernel
# with a read-only cache would otherwise find out again in every process (a child of 4 CPU s)
BUILD = "import helpers; helpers.load_tokenizer(); helpers.load_model(); helpers.eight_bit_unavailable()"


def built_cache():
    """The folder of the default tokenizer and model, built first (minutes, once) if missing."""
    built = cache_dir()
    if not all((built / part).is_dir() for part in ("tokenizer", "model")):
        print(f"Building the course's model cache once into {built} (a few minutes) ...", file=sys.stderr,
              flush=True)
        build = subprocess.run([sys.executable, "-c", BUILD], capture_output=True, text=True, cwd=ROOT)
        if build.returncode != 0:
            raise RuntimeError(f"building the course cache failed:\n{build.stderr[-2000:]}")
    return built
