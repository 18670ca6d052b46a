"""`python -m course.grade --submissions PATH [--full-size] [python -m autograde's options]`: grade
a class of this course (`make autograde`).

It tells the grader what it knows of the course, unless the command line says it:
- --source: the course's lessons in every language as one nbgrader source (course.i18n's
  grading_source: the assignments <lesson>, <lesson>-nl, <lesson>-id ..., course.lessons.Edition);
- --variants: the table of those assignments (autograde/variants.py): each one's lesson, language
  and sizes (course/lessons.py's small profile; --full-size: none, the lessons' own), each
  language's name and the feedback page's texts from helpers' catalogs;
- --expose helpers/, the kernel's environment (course.lessons.KERNEL_ENVIRONMENT), and helpers
  among the packages --protected and --preload name;
- --cache: the model cache the kernels read (built once where missing);
- --earlier-releases: the lessons' releases in the course's git history
  (course/release_history.py), so that a submission of a lesson fetched before the instructor
  changed it is not `modified`.
The source and the table are written into a temporary folder only this user may read, anew for
each run. Each submission is graded as the language its notebook says (autograde/collect.py).
Every other option is autograde's (`python -m autograde --help`); so is the exit status.
"""
import json
import sys
import tempfile
from pathlib import Path

from autograde import __main__ as autograde
from autograde.feedback_page import TEXTS
from helpers.language import LANGUAGE_NAMES, LANGUAGES, translation

from .i18n import grading_source
from .lessons import KERNEL_ENVIRONMENT, editions, profile
from .model_cache import built_cache
from .paths import ROOT, lessons
from .release_history import earlier_releases

FULL_SIZE = "--full-size"
# what a kernel may import of the course, and what it must not patch (autograde/guard.py)
EXPOSE = [str(ROOT / "helpers")]
PROTECTED = ["builtins", "math", "numpy", "torch", "helpers", "IPython", "ipykernel"]
PRELOAD = ["numpy", "torch", "helpers.*"]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    full_size = FULL_SIZE in argv
    argv = [arg for arg in argv if arg != FULL_SIZE]
    options = autograde.parse(argv)
    if not options.submissions.strip():
        return autograde.main(argv)  # autograde says what is missing
    with tempfile.TemporaryDirectory(prefix="autograde-source-") as folder:  # only we may read it
        told = []  # what the grader is told of the course, unless the command line says it
        try:
            if not options.source:
                grading_source(Path(folder) / "source")
                told += ["--source", str(Path(folder) / "source")]
            if not options.cache:
                told += ["--cache", str(built_cache())]
        except (OSError, ValueError, RuntimeError) as error:
            print(f"autograde: writing the course's grading source failed: {error}", file=sys.stderr)
            return 2
        if not _given(argv, "--variants"):
            table = Path(folder) / "variants.json"
            table.write_text(json.dumps(variants(full_size), indent=1))
            told += ["--variants", str(table)]
        for option, values in (("--expose", EXPOSE), ("--protected", PROTECTED), ("--preload", PRELOAD)):
            if not _given(argv, option):
                told += [option, *values]
        if not _given(argv, "--kernel-env"):
            told += [f"--kernel-env={name}={value}" for name, value in KERNEL_ENVIRONMENT.items()]
        if not options.earlier_releases:
            releases = Path(folder) / "earlier-releases.json"
            releases.write_text(json.dumps(earlier_releases(lessons())))
            told += ["--earlier-releases", str(releases)]
        return autograde.main([*argv, *told])


def _given(argv, option):
    return any(arg == option or arg.startswith(f"{option}=") for arg in argv)


def variants(full_size=False):
    """The variants table of every lesson in every language (autograde/variants.py)."""
    return {"assignments": {edition.assignment: {
                "lesson": edition.lesson, "language": edition.language,
                "parameters": {} if full_size else grading_sizes(edition.lesson)}
                for edition in editions(lessons())},
            "languages": {language: {"name": LANGUAGE_NAMES[language],
                                     "texts": {text: translation(text, language) for text in TEXTS}}
                          for language in LANGUAGES}}


def grading_sizes(lesson):
    """{name: Python source} of the lesson's small profile: the sizes it is graded at."""
    return {name: repr(value) for name, value in profile(lesson, "small").items()}


if __name__ == "__main__":
    sys.exit(main())
