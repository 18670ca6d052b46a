"""Execute every lesson (solutions/<lesson>/<lesson>.ipynb) with papermill into build/run/.

    python -m course.run                       # all lessons, fast default parameters
    python -m course.run 02_accelerator        # one lesson
    python -m course.run --compare             # all lessons and course.compare, side by side (make run)
    python -m course.run --language nl         # the Dutch lessons (made from solutions/ and locale/)
    python -m course.run -p model_name distilbert-base-cased -p data_name glue/mrpc \\
        -p sizes null -p learning_rate 2e-5                 # the slides' setting (online, GPU)

Prints one line per notebook (name, seconds, status) and exits 1 if any cell failed.
Values after -p are read as YAML: 2e-5 is a number, null is None, {train: 64} is a dict.
Notebooks run side by side, one per CPU core (--jobs): each kernel uses one torch thread.
"""
import argparse
import concurrent.futures
import contextlib
import functools
import io
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import yaml

from helpers.language import LANGUAGES

from . import i18n
from .lessons import KERNEL_THREADS, SOURCE_LANGUAGE, run_dir
from .paths import BUILD, ROOT, lesson_notebooks

OUT = run_dir(SOURCE_LANGUAGE)


def usable_cores():
    """The CPU cores this process may use (Linux: its affinity, e.g. in a container; elsewhere: all)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def children_cpu_seconds():
    """CPU seconds used so far by finished child processes (the kernels papermill started)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Run in each kernel when it starts (IPKernelApp.exec_lines), leaving no name behind: at exit, gc.freeze()
# puts every object out of the garbage collector's reach before Python's own shutdown. With torch, transformers
# and datasets imported (about 500,000 objects) that shutdown's collections took 2-3 s after the last cell of
# every notebook, and papermill waits for the kernel to end. Every atexit function still runs (temporary
# folders are removed); only cycles of objects that Python would free just before the process ends stay.
FAST_EXIT = "import atexit as _atexit, gc as _gc; _atexit.register(_gc.freeze); del _atexit, _gc"


def kernel_config():
    """Kernels talk over Unix sockets (IPC), not TCP: only this machine can reach them, and ipykernel
    does not print its warning about unencrypted TCP once per notebook. The sockets are named after
    this process, so that kernels running side by side (one per process) do not share them.
    Each kernel runs FAST_EXIT when it starts."""
    from traitlets.config import Config

    sockets = Path(tempfile.gettempdir()) / f"course-run-kernel-{os.getpid()}"
    return Config(KernelManager={"transport": "ipc", "ip": str(sockets)},
                  NotebookClient={"extra_arguments": [f"--IPKernelApp.exec_lines={FAST_EXIT}"]})


def run_notebook(notebook, out=OUT, parameters=None, cell_timeout=None):
    """Execute one notebook with papermill; return (seconds, error message or None).

    cell_timeout: seconds a cell may run before it fails (None: no limit)."""
    import papermill

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:  # the kernel inherits this process's environment, for this call only: one thread each
        with mock.patch.dict(os.environ, KERNEL_THREADS):
            papermill.execute_notebook(
                str(notebook), str(out / notebook.name), parameters=parameters or {},
                kernel_name="python3", cwd=str(ROOT), progress_bar=False, log_output=False,
                config=kernel_config(), execution_timeout=cell_timeout)
    except papermill.PapermillExecutionError as error:
        return time.perf_counter() - start, f"cell {error.exec_count}: {error.ename}: {error.evalue}"
    except Exception as error:  # the kernel died, a timeout, a missing kernel ...
        return time.perf_counter() - start, f"{type(error).__name__}: {error}"
    return time.perf_counter() - start, None


def run_and_measure(notebook, out, parameters, cell_timeout=None):
    """run_notebook, plus the kernel's CPU seconds (a steadier measure on a busy machine).

    Each call runs in its own worker process, so its children are this notebook's kernel only.
    The kernel's own log (ipykernel's messages, not the cells' output, which the executed notebook
    keeps) goes to <out>/logs/<lesson>.log instead of between the lines of the report: for example
    the "KeyboardInterrupt caught" that jupyter_client's interrupt before shutdown can cause.
    """
    log = Path(out) / "logs" / f"{notebook.stem}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cpu = children_cpu_seconds()
    with open(log, "w") as file:
        stderr = os.dup(2)
        os.dup2(file.fileno(), 2)  # the kernel inherits this process's stderr
        try:
            seconds, error = run_notebook(notebook, out, parameters, cell_timeout)
        finally:
            os.dup2(stderr, 2)
            os.close(stderr)
    return seconds, children_cpu_seconds() - cpu, error


def compare_quietly():
    """course.compare's table, as text (printed after the lessons' lines, not between them)."""
    from . import compare

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        compare.main(["--no-progress"])
    return printed.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson names (default: all)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"), help="set a parameter of the notebooks")
    parser.add_argument("--out", default=None, help="folder for the executed notebooks (default: build/run/, "
                                                    "build/run/<language>/ for nl and id)")
    parser.add_argument("--language", choices=LANGUAGES, default=SOURCE_LANGUAGE,
                        help="the lessons' language; a translation is written into build/i18n/<language>/ first")
    parser.add_argument("--jobs", type=int, default=usable_cores(),
                        help="notebooks run side by side (default: one per CPU core)")
    parser.add_argument("--compare", action="store_true",
                        help="also compare the training paths (course.compare), side by side with the lessons")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    parameters = {name: yaml.safe_load(value) for name, value in args.parameter}
    out = Path(args.out or run_dir(args.language)).resolve()
    notebooks = lesson_notebooks(args.lessons)
    if args.language != SOURCE_LANGUAGE:  # the same solutions, with the language's markdown and course_language
        notebooks = i18n.translate_lessons(BUILD / "i18n" / args.language, args.language,
                                           names=[notebook.stem for notebook in notebooks])
    start, failed = time.perf_counter(), 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        comparison = pool.submit(compare_quietly) if args.compare else None  # the longest job first
        results = pool.map(functools.partial(run_and_measure, out=out, parameters=parameters), notebooks)
        for notebook, (seconds, cpu, error) in zip(notebooks, results):  # in lesson order
            failed += error is not None
            status = "ok" if error is None else "FAILED: " + error
            print(f"{notebook.stem:28s} {seconds:6.1f} s  (cpu {cpu:5.1f} s)  {status}", flush=True)
        if comparison:
            try:
                table = comparison.result()
            except Exception as error:  # reported like a failed notebook; run course.compare for the traceback
                failed += 1
                table = f"FAILED: {type(error).__name__}: {error}"
            print("\nThe training paths compared (python -m course.compare):", table, sep="\n")
    print(f"{len(notebooks)} notebooks in {time.perf_counter() - start:.0f} s, {args.jobs} at a time; "
          f"executed notebooks are in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
