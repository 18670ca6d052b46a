"""Grading a class with nbgrader: collect the submissions, grade each one in its own sandboxed
kernel, write the feedback, the table and the class report (`python -m autograde`; README,
"Grading a class"). The release and the lessons' execution live in `course/`."""
from pathlib import Path

# The course repository: the kernels import `helpers` from it, and the default folders are in it.
# (course/paths.py has its own: autograde may not import course, which imports autograde.)
REPO = Path(__file__).resolve().parent.parent
