"""`python -m autograde --submissions PATH --out OUT --jobs N`: grade a class (see README).

A rerun into the same OUT grades only the submissions not graded there yet or changed since
(the submitted notebook, the assignment's source and release, the grading options) and keeps the
rest; --regrade grades all again. Manual grades in the gradebook stay.

Exit status: 0 when the batch was processed (even if some submissions failed: see grades.csv),
2 when it could not be (bad path, broken course sources, no isolation available), 128 + the
signal's number when SIGINT, SIGTERM or SIGHUP stopped it (rerun to grade what is left).

--source is the instructor's notebooks with nbgrader markup, one folder per assignment. Graded
alone, each assignment is a lesson of its own. What a course knows of them it tells with
--variants (each assignment's lesson, language and sizes; each language's feedback texts:
autograde/variants.py), --expose, --kernel-env, --protected, --preload and --cache: `python -m
course.grade` (what `make autograde` runs) writes the course's lessons in every language and
calls this command with all of it. autograde never imports or calls the course.
"""
import argparse
import json
import os
import sys

from .collect import CollectError
from .nbgrader_course import CourseError
from .sandbox import SandboxError
from .settings import GradingSettings
from .shards import shard_argument
from .variants import Variants


def parse(argv=None):
    """The command line as the run's GradingSettings."""
    parser = argparse.ArgumentParser(prog="python -m autograde", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", required=True,
                        help="folder <student>/<assignment>/<notebook>.ipynb, or an LMS zip")
    parser.add_argument("--out", default="build/grading")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--source", default=None,
                        help="instructor notebooks with nbgrader markup, a folder per assignment "
                             "(python -m course.grade gives the course's lessons in every language)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per notebook")
    parser.add_argument("--memory-mb", type=int, default=6144, help="address space per kernel")
    parser.add_argument("--max-output-bytes", type=int, default=200_000, help="kept per cell")
    parser.add_argument("--named-regexp", default=None,
                        help="LMS zip file names: regexp with (?P<student_id>) and (?P<file_id>)")
    parser.add_argument("--protected", nargs="*",
                        default=["builtins", "math", "numpy", "torch", "IPython", "ipykernel"],
                        help="packages whose functions are restored before every test cell")
    parser.add_argument("--preload", nargs="*", default=["numpy", "torch"],
                        help="imported before student code, so their snapshot is trusted "
                             "(\"package.*\": its modules too)")
    parser.add_argument("--expose", nargs="*", default=[],
                        help="folders of packages the kernels may import, read-only (python -m "
                             "course.grade gives helpers/)")
    parser.add_argument("--kernel-env", action="append", default=[], type=_setting,
                        metavar="NAME=VALUE", help="set in every kernel's environment, repeatable "
                                                   "(python -m course.grade gives the course's)")
    parser.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                        default=os.environ.get("AUTOGRADE_SANDBOX", "on") != "off",
                        help="run kernels as yourself (trusted submissions only)")
    parser.add_argument("--shard", default=None, type=shard_argument,
                        help="K/N: grade only the K-th of N deterministic shares (merge the OUT "
                             "folders with python -m autograde.shards)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, also those OUT holds unchanged")
    parser.add_argument("--cache", default="",
                        help="a model cache the kernels read: a read-only copy, whose parent folder "
                             "they get as COURSE_CACHE (python -m course.grade gives the course's)")
    parser.add_argument("--variants", default=None, type=_variants_file,
                        help="a JSON file: each assignment's lesson, language and sizes (Python "
                             "sources set after its parameters cell), each language's name and "
                             "feedback texts (autograde/variants.py; python -m course.grade writes it)")
    parser.add_argument("--earlier-releases", default={}, type=_earlier_releases_file,
                        help="a JSON file {assignment: {notebook: [release, ...]}}, each an earlier "
                             "release's cells with a grade id as [grade id, cell type, sha256 of "
                             "a locked cell's source or null]: a submission is compared with the "
                             "release it differs least from (python -m course.grade gives the "
                             "course's git history of notebooks/)")
    options = vars(parser.parse_args(argv))
    told = options.pop("kernel_env")
    return GradingSettings(**{**options, "jobs": max(1, options["jobs"]),
                              "protected": tuple(options["protected"]),
                              "preload": tuple(options["preload"]), "expose": tuple(options["expose"]),
                              "environment": tuple(told), "variants": options["variants"] or Variants()})


def _setting(text):
    name, equals, value = text.partition("=")
    if not (equals and name.isidentifier()):
        raise argparse.ArgumentTypeError(f"--kernel-env {text!r}: expected NAME=VALUE")
    return name, value


def _variants_file(path):
    try:
        return Variants.read(path)
    except (OSError, ValueError) as error:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {error}")


def _earlier_releases_file(path):
    try:
        table = json.loads(open(path).read())
    except (OSError, ValueError) as error:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {error}")
    if not (isinstance(table, dict) and all(
            isinstance(notebooks, dict) and all(isinstance(releases, list) and all(map(_is_release, releases))
                                                for releases in notebooks.values())
            for notebooks in table.values())):
        raise argparse.ArgumentTypeError(f"{path}: not {{assignment: {{notebook: [release, ...]}}}}")
    return table


def _is_release(release):
    """[[grade id, cell type, checksum or None], ...] (autograde.validate.released_cells)."""
    return isinstance(release, list) and all(isinstance(cell, list) and len(cell) == 3 for cell in release)


def main(argv=None):
    options = parse(argv)
    if not options.submissions.strip():
        print("autograde: give the submissions: make autograde SUBMISSIONS=<folder or zip>",
              file=sys.stderr)
        return 2
    if not options.source:
        print("autograde: give --source (the course's lessons: python -m course.grade, or make "
              "autograde, writes them and passes them)", file=sys.stderr)
        return 2
    from .batch import run
    try:
        return run(options)
    except (CollectError, CourseError, SandboxError, FileNotFoundError) as error:
        print(f"autograde: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
