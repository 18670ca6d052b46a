"""nbgrader gradebooks: opening one, and copying a submission's grades from one into another.

Two copies happen: a worker's gradebook into OUT's after each submission (batch.py: OUT's
gradebook has one writer, the batch), and a shard's OUT into the merged OUT (shards.py). Both
go through `copy_submission`; they differ in whose manual grades count (its `manual` argument).
"""
import warnings
from contextlib import contextmanager

from nbgrader.api import Gradebook, MissingEntry


@contextmanager
def opened(folder):
    """The gradebook of an nbgrader course folder (`folder`/gradebook.db), closed after the block."""
    warnings.filterwarnings("ignore", module="nbgrader.api")  # SQLAlchemy autoflush chatter
    with Gradebook(f"sqlite:///{folder}/gradebook.db") as gradebook:
        yield gradebook


def copy_submission(source, target, assignment, student, *, manual, not_graded=""):
    """Copy `student`'s submission of `assignment` from gradebook `source` into `target`, creating
    the student and the submission there; returns the target's submission (its score, max_score).

    manual=False (a worker's gradebook, just autograded): its automatic scores; the manual scores
    in `target` stay (a regrade keeps the instructor's), and a grade that has one still needs the
    instructor's look. A submission `source` lacks (or source None: the worker left no gradebook)
    scores 0, with the comment "Not graded: " + `not_graded`.
    manual=True (a shard's gradebook, perhaps graded by hand): every score and comment as it is.
    """
    if manual:
        found = source.find_submission(assignment, student)
    else:
        found = _find(source, "find_submission", assignment, student)
    target.update_or_create_student(student)
    copy = target.update_or_create_submission(assignment, student,
                                              timestamp=found.timestamp if found else None)
    for notebook in copy.notebooks:
        for grade in notebook.grades:
            if manual:
                was = source.find_grade(grade.name, notebook.name, assignment, student)
                grade.auto_score, grade.manual_score = was.auto_score, was.manual_score
                grade.extra_credit = was.extra_credit
                grade.needs_manual_grade = was.needs_manual_grade
                continue
            was = _find(source, "find_grade", grade.name, notebook.name, assignment, student) if found else None
            if was is None or (was.auto_score is None and not was.needs_manual_grade):
                grade.auto_score, grade.needs_manual_grade = 0.0, grade.manual_score is not None
            else:
                grade.auto_score = was.auto_score
                grade.needs_manual_grade = was.needs_manual_grade or grade.manual_score is not None
        for comment in notebook.comments:
            if manual:
                was = source.find_comment(comment.name, notebook.name, assignment, student)
                comment.auto_comment, comment.manual_comment = was.auto_comment, was.manual_comment
            else:  # nbgrader's own "No response." is not kept
                comment.auto_comment = None if found else "Not graded: " + not_graded[:200]
    target.db.commit()
    return copy


def _find(source, method, *names):
    """source.<method>(*names), or None where `source` is None or the entry is missing."""
    if source is None:
        return None
    try:
        return getattr(source, method)(*names)
    except MissingEntry:
        return None
