"""The real lessons through `python -m autograde`: on every lesson a perfect submission (the
solutions put into the released notebook) scores full marks and the blank release scores zero,
both with status "graded" (no false alarm from the tampering guard on real torch/transformers
code). Lesson 1 adds a partial submission and one that patches the course's checking helpers.
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograde_toy import require_sandbox  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir()
                 if (p / f"{p.name}.ipynb").exists() and
                 (REPO / "notebooks" / p.name / f"{p.name}.ipynb").exists()) \
    if (REPO / "solutions").is_dir() else []
FIRST = "01_basic_loop"
WRONG_SCHEDULER = ("import torch\n\ndef make_lr_scheduler(optimizer, num_batches, epochs):\n"
                   "    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)\n\n"
                   "from helpers import exercises\n"
                   "exercises.schedule_mismatch = lambda *args, **kwargs: None  # 'always right'\n")


def grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def solutions(lesson):
    source = nbformat.read(REPO / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    return {grade_id(c): "\n".join(line for line in c.source.split("\n")
                                   if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
            for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}


def points(lesson):
    source = nbformat.read(REPO / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    return {grade_id(c): float(c.metadata["nbgrader"]["points"]) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def release_with(lesson, answers):
    nb = nbformat.read(REPO / "notebooks" / lesson / f"{lesson}.ipynb", as_version=4)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


@pytest.fixture(scope="module")
def lessons_graded():
    require_sandbox()
    if not LESSONS:
        pytest.skip("no lessons in solutions/ with a release in notebooks/ yet")
    root = Path(tempfile.mkdtemp(prefix="autograde-lessons-"))
    submissions = root / "submissions"
    cases = {}
    for lesson in LESSONS:
        cases[("perfect", lesson)] = (release_with(lesson, solutions(lesson)), sum(points(lesson).values()))
        cases[("blank", lesson)] = (release_with(lesson, {}), 0.0)
    if FIRST in LESSONS:
        answers, pts = solutions(FIRST), points(FIRST)
        if {"l1-make-lr-scheduler", "l1-train-one-epoch"} <= set(answers):
            cases[("partial", FIRST)] = (release_with(FIRST, {"l1-make-lr-scheduler": answers[
                "l1-make-lr-scheduler"]}), pts["l1-test-make-lr-scheduler"])
            cases[("tamperer", FIRST)] = (release_with(FIRST, dict(
                answers, **{"l1-make-lr-scheduler": WRONG_SCHEDULER})),
                sum(pts.values()) - pts["l1-test-make-lr-scheduler"])
    for (student, lesson), (nb, _) in cases.items():
        folder = submissions / student / lesson
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lesson}.ipynb")
    run = subprocess.run([sys.executable, "-m", "autograde", "--submissions", str(submissions),
                          "--out", str(root / "out"), "--jobs", str(os.cpu_count())],
                         cwd=REPO, capture_output=True, text=True, timeout=1200)
    with open(root / "out" / "grades.csv", newline="") if run.returncode == 0 else open(os.devnull) as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    yield run, rows, {k: v[1] for k, v in cases.items()}
    shutil.rmtree(root, ignore_errors=True)


def test_the_batch_of_lessons_completes(lessons_graded):
    run, rows, expected = lessons_graded
    assert run.returncode == 0, run.stderr[-3000:]
    assert set(rows) == set(expected)


@pytest.mark.parametrize("lesson", LESSONS)
def test_perfect_scores_full_marks_and_blank_scores_zero(lessons_graded, lesson):
    _, rows, expected = lessons_graded
    perfect, blank = rows[("perfect", lesson)], rows[("blank", lesson)]
    assert (float(perfect["score"]), perfect["status"]) == (expected[("perfect", lesson)], "graded"), perfect
    assert float(perfect["max_score"]) == expected[("perfect", lesson)]
    assert (float(blank["score"]), blank["status"]) == (0.0, "graded"), blank


def test_partial_and_tampering_submissions_of_lesson_1(lessons_graded):
    _, rows, expected = lessons_graded
    if ("partial", FIRST) not in expected:
        pytest.skip("lesson 1's exercises were renamed; update this test")
    partial, tamperer = rows[("partial", FIRST)], rows[("tamperer", FIRST)]
    assert (float(partial["score"]), partial["status"]) == (expected[("partial", FIRST)], "graded")
    assert (float(tamperer["score"]), tamperer["status"]) == (expected[("tamperer", FIRST)],
                                                              "tampered"), tamperer
    assert "helpers.exercises.schedule_mismatch" in tamperer["detail"]
