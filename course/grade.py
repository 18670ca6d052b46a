"""`python -m course.grade --submissions PATH [--full-size] [python -m autograde's options]`: grade
a class of this course (`make autograde`).

It tells the grader what it knows of the course, unless the command line says it: --source, the
course's lessons in every language as one nbgrader source (course.i18n.grading_source: the
assignments <lesson>, <lesson>-nl, <lesson>-id ...); --parameters, the sizes to grade each at
(course/lessons.py's small profile; --full-size: none, the lessons' own); --cache, the model cache
the kernels read (built once where missing); --earlier-releases, the lessons' releases in the
course's git history (course/release_history.py), so that a submission of a lesson fetched before
the instructor changed it is not `modified`. The source and the sizes are written into a temporary
folder only this user may read, anew for each run. Each submission is graded as the language its
notebook says (autograde/collect.py). Every other option is autograde's (`python -m autograde
--help`); so is the exit status.
"""
import json
import sys
import tempfile
from pathlib import Path

from autograde import __main__ as autograde
from autograde.assignments import assignment
from helpers.language import LANGUAGES

from .i18n import grading_source
from .lessons import profile
from .model_cache import built_cache
from .paths import lessons
from .release_history import earlier_releases

FULL_SIZE = "--full-size"


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
        if not options.parameters:
            sizes = Path(folder) / "parameters.json"
            sizes.write_text(json.dumps({} if full_size else grading_parameters(), indent=1))
            told += ["--parameters", str(sizes)]
        if not options.earlier_releases:
            releases = Path(folder) / "earlier-releases.json"
            releases.write_text(json.dumps(earlier_releases(lessons())))
            told += ["--earlier-releases", str(releases)]
        return autograde.main([*argv, *told])


def grading_parameters():
    """{assignment: {name: Python source}}: every lesson, in every language, at its small profile."""
    return {assignment(lesson, language): {name: repr(value) for name, value in profile(lesson, "small").items()}
            for lesson in lessons() for language in LANGUAGES}


if __name__ == "__main__":
    sys.exit(main())
