"""`python -m course.grade --submissions PATH [--full-size] [python -m autograde's options]`: grade
a class of this course (`make autograde`).

Without --source, it writes the course's lessons in every language as one nbgrader source
(course.i18n.grading_source: the assignments <lesson>, <lesson>-nl, <lesson>-id ...) and the sizes
to grade each at (course/lessons.py's small profile, as `--parameters`; --full-size: none, the
lessons' own) into a temporary folder only this user may read, anew for each run, and grades the
class with them; each submission is graded as the language its notebook says
(autograde/collect.py). With --source it grades that source as it is. Every other option is
autograde's (`python -m autograde --help`); so is the exit status.
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
from .paths import lessons

FULL_SIZE = "--full-size"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    full_size = FULL_SIZE in argv
    argv = [arg for arg in argv if arg != FULL_SIZE]
    options = autograde.parse(argv)
    if options.source or not options.submissions.strip():
        return autograde.main(argv)  # a source of one's own, or autograde says what is missing
    with tempfile.TemporaryDirectory(prefix="autograde-source-") as folder:  # only we may read it
        source, sizes = Path(folder) / "source", Path(folder) / "parameters.json"
        try:
            grading_source(source)
        except (OSError, ValueError) as error:
            print(f"autograde: writing the course's grading source failed: {error}", file=sys.stderr)
            return 2
        sizes.write_text(json.dumps({} if full_size else grading_parameters(), indent=1))
        return autograde.main([*argv, "--source", str(source), "--parameters", str(sizes)])


def grading_parameters():
    """{assignment: {name: Python source}}: every lesson, in every language, at its small profile."""
    return {assignment(lesson, language): {name: repr(value) for name, value in profile(lesson, "small").items()}
            for lesson in lessons() for language in LANGUAGES}


if __name__ == "__main__":
    sys.exit(main())
