"""A grading run's settings, parsed once (autograde/__main__.py), and every limit a kernel gets.

`GradingSettings` is frozen. Its fields decide what a rerun grades again: every field counts in a
submission's fingerprint (autograde/resume.py) unless it is marked `run_only` (where the files
are, how many jobs, which share): a field added and forgotten makes a rerun grade again rather
than keep grades the new field would change.

The limits, each written here once:
- per kernel: --memory-mb of address space; CPU seconds derived from --timeout; files, processes,
  and the size of its private /tmp and /dev/shm (KernelLimits, applied by autograde/zygote.py;
  bwrap gives the zygote the same /tmp);
- per cell and per notebook: --cell-timeout and --timeout (autograde/execute.py); the kernel's
  start and its output's wait (KERNEL_START_SECONDS, IOPUB_SECONDS); --max-output-bytes per cell;
- per submission: the worker's whole budget (`worker_seconds`), after which the batch kills it.
What a kernel may read and what it sees empty, and its environment, are built here too
(`exposed`, `hidden`, `kernel_env`): what the course adds to them (--expose, --kernel-env) it is
told, as python -m course.grade tells it.
"""
import shutil
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .variants import Variants

AUTOGRADE = Path(__file__).resolve().parent  # a kernel runs autograde.guard: it may import this

FILE_BYTES = 256 * 1024 ** 2      # the largest file a kernel may write
PROCESSES = 1024                  # processes and threads of the kernel's uid
TMP_BYTES = 512 * 1024 ** 2       # each of the kernel's /tmp and /dev/shm (in memory)
KERNEL_START_SECONDS = 120        # a kernel that has not started by then fails the notebook
IOPUB_SECONDS = 10                # waiting for a cell's last output once it has finished
WORKER_SECONDS = 180              # a worker's own work (nbgrader, feedback) beside its notebooks


def run_only(default=None):
    """A field that does not change a grade (not in the fingerprint)."""
    return field(default=default, metadata={"run_only": True})


@dataclass(frozen=True)
class KernelLimits:
    memory_bytes: int
    cpu_seconds: int
    file_bytes: int = FILE_BYTES
    processes: int = PROCESSES
    tmp_bytes: int = TMP_BYTES


@dataclass(frozen=True)
class GradingSettings:
    # what changes a grade
    cell_timeout: int          # seconds per cell
    timeout: float             # seconds per notebook
    memory_mb: int             # address space per kernel
    max_output_bytes: int      # output kept per cell
    protected: tuple           # packages whose functions are restored before every test cell
    preload: tuple             # imported before student code, so their snapshot is trusted
    sandbox: bool              # False: kernels run as the grader (trusted submissions only)
    variants: Variants         # each assignment's lesson, language and sizes; each language's texts
    expose: tuple = ()         # packages the kernels may import (read-only)
    environment: tuple = ()    # (NAME, VALUE) pairs added to the kernels' environment
    cache: str = ""            # a model cache the kernels read (its copy's parent is COURSE_CACHE)
    # {assignment: {notebook: [validate.released_cells of an earlier release]}}: not `modified`
    earlier_releases: dict = field(default_factory=dict)
    # what does not
    submissions: str = run_only("")
    out: str = run_only("")
    source: str = run_only("")
    jobs: int = run_only(1)
    named_regexp: str = run_only()
    shard: tuple = run_only()
    regrade: bool = run_only(False)

    def grading_rules(self):
        """{field: value} of what changes a grade: the salt of every submission's fingerprint."""
        values = asdict(self)  # the variants table as plain JSON too
        return {f.name: values[f.name] for f in fields(self) if not f.metadata.get("run_only")}

    def kernel_limits(self):
        # CPU seconds: a notebook's wall-clock limit four times over (a kernel's threads count
        # together) and a minute for its imports; the wall clock stops a notebook long before.
        return KernelLimits(memory_bytes=self.memory_mb * 1024 ** 2, cpu_seconds=int(self.timeout * 4 + 60))

    def worker_seconds(self, notebooks):
        """How long a worker may grade a submission of `notebooks` notebooks before it is killed."""
        return self.timeout * notebooks + WORKER_SECONDS


def kernel_env(settings=None, cache=None, scratch=None):
    """A kernel's whole environment: what the settings add (--kernel-env), the exposed packages on
    its path, the model cache (`cache`); with a sandbox (`scratch`: its HOME and cwd) also its
    home and private /tmp."""
    packages = [AUTOGRADE, *(Path(p).resolve() for p in (settings.expose if settings else ()))]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "MPLBACKEND": "agg",
           **dict(settings.environment if settings else ()),
           "PYTHONPATH": ":".join(dict.fromkeys(str(p.parent) for p in packages))}
    if cache:
        env["COURSE_CACHE"] = str(cache)
    if scratch:
        env.update(HOME=str(scratch), TMPDIR="/tmp", USER="student", LOGNAME="student",
                   MPLCONFIGDIR="/tmp/matplotlib", IPYTHONDIR=f"{scratch}/.ipython",
                   JUPYTER_RUNTIME_DIR="/tmp/jupyter", PYTHONNOUSERSITE="1")
    return env


def exposed(settings, env):
    """What a kernel may read: Python, autograde, the packages of --expose, the model cache."""
    paths = [sys.base_prefix, sys.prefix, str(AUTOGRADE), *(str(Path(p).resolve()) for p in settings.expose)]
    return paths + ([env["COURSE_CACHE"]] if "COURSE_CACHE" in env else [])


def hidden(source, out, submissions, jobs_dir):
    """What a kernel sees empty where it lies inside what it may read: the grader's folders and
    the course's git history."""
    paths = [source, out, Path(submissions).resolve(), jobs_dir]
    for parent in [source, *source.parents]:
        if (parent / ".git").exists():
            paths.append(parent / ".git")
            break
    return [str(p) for p in paths]


def kernel_cache(cache, work):
    """A read-only copy of --cache (a model cache the kernels read) in the work folder, or None."""
    if not cache:
        return None
    built = Path(cache)
    copy = work / "cache"
    shutil.copytree(built, copy / built.name, ignore=shutil.ignore_patterns(".*.lock"))
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy
