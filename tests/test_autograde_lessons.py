"""The real lessons through `python -m autograde`: on every lesson a perfect submission (the
solutions put into the released notebook) scores full marks and the blank release scores zero,
both with status "graded" (no false alarm from the tampering guard on real torch/transformers
code). Lesson 1 adds a partial submission and one that patches the course's checking helpers.
"""
import pytest

from lesson_runs import FIRST, graded_lessons

pytestmark = pytest.mark.slow

LESSONS = graded_lessons()


def test_the_batch_of_lessons_completes(graded_class):
    assert graded_class.run.returncode == 0, graded_class.run.stderr[-3000:]
    assert set(graded_class.rows) == set(graded_class.expected)


@pytest.mark.parametrize("lesson", LESSONS)
def test_perfect_scores_full_marks_and_blank_scores_zero(graded_class, lesson):
    rows, expected = graded_class.rows, graded_class.expected
    perfect, blank = rows[("perfect", lesson)], rows[("blank", lesson)]
    assert (float(perfect["score"]), perfect["status"]) == (expected[("perfect", lesson)], "graded"), perfect
    assert float(perfect["max_score"]) == expected[("perfect", lesson)]
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
