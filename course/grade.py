"""`python -m course.grade --submissions PATH [python -m autograde's options]`: grade a class of
this course (`make autograde`).

Without --source, it writes the course's lessons in every language as one nbgrader source
(course.i18n.grading_source: the assignments <lesson>, <lesson>-nl, <lesson>-id ...) into a
temporary folder only this user may read, anew for each run, and grades the class with it;
each submission is graded as the language its notebook says (autograde/collect.py). With
--source it grades that source as it is. Every other option is autograde's
(`python -m autograde --help`); so is the exit status.
"""
import sys
import tempfile
from pathlib import Path

from autograde import __main__ as autograde

from .i18n import grading_source


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    options = autograde.parse(argv)
    if options.source or not options.submissions.strip():
        return autograde.main(argv)  # a source of one's own, or autograde says what is missing
    with tempfile.TemporaryDirectory(prefix="autograde-source-") as folder:  # only we may read it
        source = Path(folder) / "source"
        try:
            grading_source(source)
        except (OSError, ValueError) as error:
            print(f"autograde: writing the course's grading source failed: {error}", file=sys.stderr)
            return 2
        return autograde.main([*argv, "--source", str(source)])


if __name__ == "__main__":
    sys.exit(main())
