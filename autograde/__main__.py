"""`python -m autograde --submissions PATH --out OUT --jobs N`: grade a class (see README).

A rerun into the same OUT grades only the submissions not graded there yet or changed since
(the submitted notebook, the assignment's source and release, the grading options) and keeps the
rest; --regrade grades all again. Manual grades in the gradebook stay.

Exit status: 0 when the batch was processed (even if some submissions failed: see grades.csv),
2 when it could not be (bad path, broken course sources, no isolation available), 128 + the
signal's number when SIGINT, SIGTERM or SIGHUP stopped it (rerun to grade what is left).

Without --source the grader grades the course in its three languages: `python -m course.i18n
grading-source` writes solutions/ and its translations as the assignments <lesson>, <lesson>-nl
and <lesson>-id, anew for each run, and each submission is graded as the language its notebook
says (autograde/collect.py).
"""
import argparse
import os
import subprocess
import sys
import tempfile

from . import REPO
from .collect import CollectError
from .course import CourseError
from .profile import GRADING_PARAMETERS
from .sandbox import SandboxError
from .shards import shard_argument


def parse(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograde", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", required=True,
                        help="folder <student>/<assignment>/<notebook>.ipynb, or an LMS zip")
    parser.add_argument("--out", default=str(REPO / "build" / "grading"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--source", default=None,
                        help="instructor notebooks with nbgrader markup (default: the course's "
                             "lessons from solutions/ in English, Dutch and Indonesian)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per notebook")
    parser.add_argument("--memory-mb", type=int, default=6144, help="address space per kernel")
    parser.add_argument("--max-output-bytes", type=int, default=200_000, help="kept per cell")
    parser.add_argument("--named-regexp", default=None,
                        help="LMS zip file names: regexp with (?P<student_id>) and (?P<file_id>)")
    parser.add_argument("--protected", nargs="*",
                        default=["builtins", "math", "numpy", "torch", "helpers", "IPython",
                                 "ipykernel"],
                        help="packages whose functions are restored before every test cell")
    parser.add_argument("--preload", nargs="*", default=["numpy", "torch", "helpers.*"],
                        help="imported before student code, so their snapshot is trusted")
    parser.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                        default=os.environ.get("AUTOGRADE_SANDBOX", "on") != "off",
                        help="run kernels as yourself (trusted submissions only)")
    parser.add_argument("--shard", default=None, type=shard_argument,
                        help="K/N: grade only the K-th of N deterministic shares (merge the OUT "
                             "folders with python -m autograde.shards)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, also those OUT holds unchanged")
    parser.add_argument("--full-size", action="store_true",
                        help="run the demonstration cells with the lesson's own parameters, not "
                             "the grading profile's smaller sizes (autograde/profile.py)")
    options = parser.parse_args(argv)
    options.jobs = max(1, options.jobs)
    options.parameters = {} if options.full_size else GRADING_PARAMETERS
    return options


def main(argv=None):
    options = parse(argv)
    if not options.submissions.strip():
        print("autograde: give the submissions: make autograde SUBMISSIONS=<folder or zip>",
              file=sys.stderr)
        return 2
    from .batch import run
    try:
        if options.source:
            return run(options)
        with tempfile.TemporaryDirectory(prefix="autograde-source-") as folder:  # only we may read it
            options.source = course_source(os.path.join(folder, "source"))
            return run(options)
    except (CollectError, CourseError, SandboxError, FileNotFoundError) as error:
        print(f"autograde: {error}", file=sys.stderr)
        return 2


def course_source(folder):
    """Write the course's lessons in every language into `folder` as an nbgrader source; return it.
    A command, not an import: autograde may not import course (course imports autograde)."""
    built = subprocess.run([sys.executable, "-m", "course.i18n", "grading-source", "--out", folder],
                           cwd=REPO, capture_output=True, text=True)
    if built.returncode != 0:
        raise CourseError(f"writing the course's grading source failed:\n{built.stderr[-2000:]}")
    return folder


if __name__ == "__main__":
    sys.exit(main())
