"""Typical wrong answers must fail the test cells meant to catch them, and a perfect submission with
changed structure must keep full marks.

MISTAKES (tests/mistakes.py) holds, per exercise, mistakes students really make (off-by-one steps, a schedule sized
in batches, a missing zero_grad, loss.backward() instead of accelerator.backward(loss), macro
F1, a loss scaler that is not used, round instead of //, ...). A mistake is caught by its own
exercise's test cell, and where a third element names more test cells, by those too (lesson 6's
K = 1 test checks the LocalSGD loop again). Four mistakes or more per exercise. The table has a
Validate column: every mistake already fails the visible part of its test cell (what the student's
Validate runs), except those GRADING_ONLY lists, which only the hidden tests catch (at most 5 %).

The mistakes are checked in one kernel per lesson (mistake_runs.py), the session's run of the lesson
(lesson_runs.py): the lesson's solution runs once with small parameters (its editable parameters
cell, as a student may edit it), then each mistake in
turn replaces its answer, and the test cells that must catch it run as the grader runs them (the
instructor's imports and definitions first, then the test with its hidden part); then the right
answer comes back and the same test cells must pass again (their visible part, and after the
exercise's last mistake the whole cell), so that no mistake is "caught" by what an earlier one
left behind. One kernel per lesson instead of one graded lesson run per mistake:
that the grader scores a failing test cell 0 is tested on whole graded lessons elsewhere
(test_autograde_lessons.py, test_i18n_grading.py, test_autograde.py).

The grading rules for structure are checked by grading: one restructured perfect submission per
lesson, with small parameters, must keep full marks with its test cells deleted, duplicated and
moved to the end (status "modified"; each lesson mixes the three, in turn). They are students of the
session's graded class (lesson_runs.grade_lessons), graded in its batch.
"""
import collections
import os
import re

import pytest

import lesson_runs
from course.paths import lessons
from lesson_runs import SMALL, STRUCTURES, graded_test_cells, points, release_with, restructured, solutions, structure_turn
from mistakes import GRADING_ONLY, MISTAKES, catchers

pytestmark = pytest.mark.slow

# COURSE_GRADED_LESSONS (names, comma-separated, as lesson_runs.graded_lessons reads it) checks only those lessons:
# COURSE_GRADED_LESSONS=10_sharded_training pytest tests/test_autograde_mistakes.py -k 'every_mistake_fails or right_answer_passes'
LESSONS = [lesson for lesson in SMALL if lesson in (os.environ.get("COURSE_GRADED_LESSONS") or lesson).split(",")]


def test_every_exercise_has_four_mistakes():
    """Four mistakes or more for each exercise's test cell, and for each other test cell that names one."""
    every_lesson = list(SMALL)  # the table's own rule, whichever lessons this session grades
    assert set(every_lesson) == set(lessons()), "every lesson has its mistakes"
    assert {e.split("-")[0] for e in MISTAKES} == {f"l{int(lesson[:2])}" for lesson in every_lesson}
    for lesson in every_lesson:
        exercises = [g for g in solutions(lesson) if g]
        assert all(exercise in MISTAKES for exercise in exercises), lesson
        caught = collections.Counter(cell for exercise in exercises for mistake in MISTAKES[exercise]
                                     for cell in catchers(exercise, mistake))
        assert set(caught) <= set(points(lesson)), (lesson, caught)
        assert all(count >= 4 for count in caught.values()), (lesson, caught)


def rows(lesson):
    return lesson_runs.checked(lesson).rows


@pytest.mark.lesson_run("lesson", mistakes=True)
@pytest.mark.parametrize("lesson", LESSONS)
def test_the_untouched_release_fails_every_test_cell_in_its_visible_part(lesson):
    """What nbgrader validate --invert asks of the release (does any test pass?) and why a blank
    submission scores 0: every test cell fails on the stubs, already in its visible part, which is
    all that Validate runs on the release (a test that failed only in its hidden part would give the
    student a "Success" for nothing)."""
    untouched = lesson_runs.checked(lesson).untouched
    assert set(untouched) == set(points(lesson)), "every test cell was tried on the release"
    passing = [cell for cell, (visible_failed, failed) in untouched.items() if not failed]
    assert not passing, f"test cells that pass on the untouched release: {passing}"
    hidden_only = [cell for cell, (visible_failed, _) in untouched.items() if not visible_failed]
    assert not hidden_only, f"test cells that fail the untouched release only in their hidden part: {hidden_only}"


@pytest.mark.lesson_run("lesson", mistakes=True)
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_mistake_fails_the_test_cells_that_must_catch_it(lesson):
    found = rows(lesson)
    expected = {(exercise, mistake[0], cell) for exercise in MISTAKES if exercise.startswith(f"l{int(lesson[:2])}-")
                for mistake in MISTAKES[exercise] for cell in catchers(exercise, mistake)}
    assert {row[:3] for row in found} == expected, "every mistake of the lesson, each of its test cells, was tried"
    missed = [f"{exercise}: {name}: {cell} passed" for exercise, name, cell, _, failed, _ in found if not failed]
    assert not missed, "mistakes that their test cells let through:\n" + "\n".join(missed)


@pytest.mark.lesson_run("lesson", mistakes=True)
@pytest.mark.parametrize("lesson", LESSONS)
def test_validate_catches_every_mistake_but_those_only_grading_can(lesson):
    """The table's Validate column: a mistake fails a visible test (Validate says so before the student
    hands in), unless GRADING_ONLY lists it; a listed one passes every visible test (the list is true)."""
    at_validate = collections.defaultdict(bool)
    for exercise, name, _, visible_failed, _, _ in rows(lesson):
        at_validate[exercise, name] |= visible_failed
    wrong = [f"{exercise}: {name}: " + ("Validate catches it: take it out of GRADING_ONLY" if caught else
                                        "Validate says Success: check it in a visible test, or list it in GRADING_ONLY")
             for (exercise, name), caught in sorted(at_validate.items()) if caught == ((exercise, name) in GRADING_ONLY)]
    assert not wrong, "\n".join(wrong)


def test_validate_catches_at_least_95_percent_of_the_mistakes():
    total = sum(len(mistakes) for mistakes in MISTAKES.values())
    known = {(exercise, mistake[0]) for exercise, mistakes in MISTAKES.items() for mistake in mistakes}
    assert GRADING_ONLY <= known, GRADING_ONLY - known
    assert len(GRADING_ONLY) <= 0.05 * total, f"{len(GRADING_ONLY)} of {total} mistakes pass Validate"


@pytest.mark.lesson_run("lesson", mistakes=True)
@pytest.mark.parametrize("lesson", LESSONS)
def test_the_right_answer_passes_again_after_each_mistake(lesson):
    broken = [f"after {exercise}: {name}: {cell}: {control}" for exercise, name, cell, _, _, control
              in rows(lesson) if control]
    assert not broken, "test cells that failed the right answer after a mistake:\n" + "\n".join(broken)


def test_restructure_changes_every_kind():
    """Over the lessons, every kind of change meets some test cell (a check of this file itself)."""
    seen = set()
    for lesson in SMALL:
        release = release_with(lesson, {})
        before = [cell.get("id") for cell in release.cells]
        tests = {cell.get("id") for cell in graded_test_cells(release)}
        after = [cell.get("id").removesuffix("-copy")
                 for cell in restructured(release_with(lesson, {}), structure_turn(lesson)).cells]
        seen |= {"deleted"} if tests - set(after) else set()
        seen |= {"duplicated"} if len(after) > len(set(after)) else set()
        seen |= {"moved"} if after[-1] in tests and after[-1] != before[-1] else set()
    assert seen == set(STRUCTURES), seen


@pytest.mark.parametrize("lesson", LESSONS)
def test_small_restructured_perfect_answers_keep_full_marks(graded_class, lesson):
    """Full marks, and no event but the changes themselves: a false alarm of the guard on the lesson's
    torch code (tampered), a kernel that died or ran out of time would show here."""
    row = graded_class.rows[("restructured", lesson)]
    assert (float(row["score"]), row["status"]) == (sum(points(lesson).values()), "modified"), row
    events = row["detail"].split("; ")
    assert all(re.match(rf"{lesson}: cells (deleted|duplicated|moved): ", event) for event in events), events
