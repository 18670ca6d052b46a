"""The real lessons through `python -m autograde`: lessons 1 and 2's perfect submissions (the
solutions put into the released notebook) score full marks with status "graded" (no false alarm
from the tampering guard on real torch/transformers code; every lesson's restructured perfect one
keeps full marks with no event but its changes: test_autograde_mistakes.py); lesson 6's blank
release scores zero (every lesson's release fails each of its test cells: test_autograde_mistakes.py).
Lesson 1 adds a partial submission, one that patches the course's checking helpers, one whose
last answer ends its kernel and a file that is no notebook: the hostile students of a real class.
"""
import pytest

from lesson_runs import BLANK, FIRST, LANGUAGE_MISTAKES, graded_lessons

pytestmark = pytest.mark.slow

LESSONS = graded_lessons()


def test_the_batch_of_lessons_completes(graded_class):
    assert graded_class.run.returncode == 0, graded_class.run.stderr[-3000:]
    assert set(graded_class.rows) == set(graded_class.expected)


@pytest.mark.parametrize("lesson", [lesson for lesson in LANGUAGE_MISTAKES if lesson in LESSONS])
def test_perfect_scores_full_marks(graded_class, lesson):
    rows, expected = graded_class.rows, graded_class.expected
    perfect = rows[("perfect", lesson)]
    assert (float(perfect["score"]), perfect["status"]) == (expected[("perfect", lesson)], "graded"), perfect
    assert float(perfect["max_score"]) == expected[("perfect", lesson)]


@pytest.mark.parametrize("lesson", [lesson for lesson in BLANK if lesson in LESSONS])
def test_blank_scores_zero(graded_class, lesson):
    blank = graded_class.rows[("blank", lesson)]
    assert (float(blank["score"]), blank["status"]) == (0.0, "graded"), blank


def test_partial_and_tampering_submissions_of_lesson_1(graded_class):
    rows, expected = graded_class.rows, graded_class.expected
    if FIRST not in LESSONS:
        pytest.skip(f"{FIRST} is not graded in this session (COURSE_GRADED_LESSONS)")
    assert ("partial", FIRST) in expected, ("lesson 1's exercises were renamed: update the partial and "
                                            "tampering submissions in lesson_runs.grade_lessons")
    partial, tamperer = rows[("partial", FIRST)], rows[("tamperer", FIRST)]
    assert (float(partial["score"]), partial["status"]) == (expected[("partial", FIRST)], "graded")
    assert (float(tamperer["score"]), tamperer["status"]) == (expected[("tamperer", FIRST)],
                                                              "tampered"), tamperer
    assert "helpers.exercises.schedule_mismatch" in tamperer["detail"]


def test_a_dying_kernel_and_a_broken_file_in_lesson_1(graded_class):
    """The class's other students are graded whatever these two hand in (the batch completes)."""
    rows, expected = graded_class.rows, graded_class.expected
    if FIRST not in LESSONS:
        pytest.skip(f"{FIRST} is not graded in this session (COURSE_GRADED_LESSONS)")
    killed, broken = rows[("kills-kernel", FIRST)], rows[("not-a-notebook", FIRST)]
    assert 0 < expected[("kills-kernel", FIRST)] < float(killed["max_score"]), "the points above the last answer"
    assert (float(killed["score"]), killed["status"]) == (expected[("kills-kernel", FIRST)], "kernel_died"), killed
    assert (float(broken["score"]), broken["status"]) == (0.0, "invalid_notebook"), broken
