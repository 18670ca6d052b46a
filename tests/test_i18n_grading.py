"""A class that mixes languages, graded in one batch as `make autograde` does (python -m course.grade,
which writes the course's source in every language): a perfect and a
wrong submission of lessons 1 and 2 in English, Dutch and Indonesian (small parameters, as a student
may set them), all handed in as
<student>/<lesson>/ (as nbgrader collect or an LMS export gives them). Each is graded as the
assignment of its notebook's language, as course.i18n names them (01_basic_loop, 01_basic_loop-nl,
01_basic_loop-id, ...), with the English scores, status "graded" (the translated release's
checksums are nbgrader's own), its failure message in its language (in the autograded notebook
and the feedback), and no hidden test in its feedback. What the instructor reads speaks of
lessons: grades.csv's rows name the lesson and the language, grades_wide.csv and the class report
have one column and one section per lesson.
"""
import csv
import html
import json
import os
import re
import shutil
import sys

import nbformat
import pytest

import background
from autograde_toy import require_sandbox
from course import i18n
from course.paths import NOTEBOOKS, ROOT
from helpers import language
from lesson_runs import SMALL, grade_id, small, solutions

pytestmark = pytest.mark.slow
LANGUAGES = ("en", *i18n.LANGUAGES)
# lesson: (exercise, the mistake: (solution line, its wrong version), test cell, English message, its values)
MISTAKES = {
    "01_basic_loop": ("l1-train-one-epoch", ("        lr_scheduler.step()\n", ""), "l1-test-train-one-epoch",
                      "The scheduler stepped {last_epoch} times; it should step once per batch, 3 times.",
                      {"last_epoch": 0}),
    "02_accelerator": ("l2-prepare-for-training", ("device_placement=True, cpu=cpu)", "device_placement=True)"),
                       "l2-test-prepare-for-training", "Pass cpu=cpu to the Accelerator.", {}),
}
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def solution_cells(lesson):
    return json.loads((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text())["cells"]


def hidden_lines(lesson):
    """The lines of the lesson's hidden tests that occur nowhere else in it."""
    sources = ["".join(cell["source"]) for cell in solution_cells(lesson)]
    lines = lambda text: {line.strip() for line in text.splitlines() if len(line.strip()) > 12}  # noqa: E731
    hidden = set().union(*(lines(match) for source in sources for match in HIDDEN.findall(source)))
    public = set().union(*(lines(HIDDEN.sub("", source)) for source in sources))
    return {line for line in hidden - public if not line.startswith("#")}


def submission(lesson, lang, wrong):
    """The released notebook of `lang` with the solutions typed in (and the mistake, if wrong), with
    small parameters."""
    answers = solutions(lesson)
    if wrong:
        exercise, (right, mistaken), *_ = MISTAKES[lesson]
        assert right in answers[exercise], f"{lesson}: the mistake no longer applies to {exercise}"
        answers[exercise] = answers[exercise].replace(right, mistaken)
    folder = NOTEBOOKS if lang == "en" else NOTEBOOKS / lang
    notebook = nbformat.read(folder / lesson / f"{lesson}.ipynb", as_version=4)
    for cell in notebook.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return small(notebook, SMALL[lesson])  # the scores and messages do not depend on the sizes


def in_language(lang, english, values):
    previous = language.current_language()
    language.use_language(lang)
    try:
        return language.message(english, **values)
    finally:
        language.use_language(previous)


@background.job
def graded_languages_job():
    """(its folder, grades.csv's rows) of one batch of the class in the module docstring."""
    root = background.folder("i18n-grading-")
    for lesson in MISTAKES:
        for lang in LANGUAGES:
            for kind in ("perfect", "wrong"):
                folder = root / "submissions" / f"{kind}-{lang}" / lesson  # the folder does not say the language
                folder.mkdir(parents=True)
                nbformat.write(submission(lesson, lang, kind == "wrong"), folder / f"{lesson}.ipynb")
    run = background.run([sys.executable, "-m", "course.grade", "--submissions", str(root / "submissions"),
                          "--out", str(root / "out"), "--jobs", str(os.cpu_count())], cwd=ROOT, timeout=1800)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    with open(root / "out" / "grades.csv", newline="") as f:  # a lesson and its language per row
        return root, {(r["student_id"], i18n.assignment(r["assignment"], r["language"])): r
                      for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded_languages(graded_languages_job):
    require_sandbox()
    root, rows = graded_languages_job.result()
    yield root / "out", rows
    shutil.rmtree(root, ignore_errors=True)


def test_each_submission_is_graded_as_its_notebooks_language(graded_languages):
    _, rows = graded_languages
    assert sorted(rows) == sorted((f"{kind}-{lang}", i18n.assignment(lesson, lang)) for lesson in MISTAKES
                                  for lang in LANGUAGES for kind in ("perfect", "wrong"))


@pytest.mark.parametrize("lesson", MISTAKES)
def test_every_language_gets_the_english_scores(graded_languages, lesson):
    _, rows = graded_languages
    assert {(row["assignment"], row["language"]) for row in rows.values() if row["assignment"] == lesson} == {
        (lesson, lang) for lang in LANGUAGES}
    for kind in ("perfect", "wrong"):
        english = rows[(f"{kind}-en", lesson)]
        for lang in i18n.LANGUAGES:
            row = rows[(f"{kind}-{lang}", i18n.assignment(lesson, lang))]
            assert (row["score"], row["max_score"], row["status"]) == (
                english["score"], english["max_score"], "graded"), row
    assert float(rows[("wrong-en", lesson)]["score"]) < float(rows[("perfect-en", lesson)]["score"])


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("lesson", MISTAKES)
def test_the_failure_message_is_in_the_submissions_language(graded_languages, lesson, lang):
    out, _ = graded_languages
    *_, test_cell, english, values = MISTAKES[lesson]
    expected = in_language(lang, english, values)
    if lang != "en":
        assert expected != english.format(**values)  # translated, or English with its marker
    assignment = i18n.assignment(lesson, lang)
    notebook = nbformat.read(out / "autograded" / f"wrong-{lang}" / assignment / f"{lesson}.ipynb", as_version=4)
    errors = [output for cell in notebook["cells"] if grade_id(cell) == test_cell
              for output in cell.get("outputs", []) if output["output_type"] == "error"]
    assert errors and errors[-1]["evalue"] == expected, errors
    feedback = (out / "feedback" / f"wrong-{lang}" / assignment / f"{lesson}.html").read_text()
    assert html.escape(expected, quote=False).split("'")[0] in feedback


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_hidden_test_in_any_languages_feedback(graded_languages, lang):
    out, _ = graded_languages
    for lesson in MISTAKES:
        secret = hidden_lines(lesson)
        assert secret
        for kind in ("perfect", "wrong"):
            feedback = html.unescape((out / "feedback" / f"{kind}-{lang}" / i18n.assignment(lesson, lang)
                                      / f"{lesson}.html").read_text())
            leaked = [line for line in secret if line in feedback]
            assert not leaked, f"{kind}-{lang} {lesson}: {leaked}"


def test_the_class_report_shows_each_lesson_once_and_across_languages(graded_languages):
    out, _ = graded_languages
    report = (out / "report.md").read_text()
    for lesson in MISTAKES:
        assert f"## {lesson} across languages" in report
        assert report.count(f"\n## {lesson}\n") == 1  # one section per lesson, every language in it
    assert "| l1-test-train-one-epoch | 1/2 (50 %) | 1/2 (50 %) | 1/2 (50 %) | 3/6 (50 %) |" in report
    assert "| l1-test-train-one-epoch | 3/6 (50 %) |" in report
    with open(out / "grades_wide.csv", newline="") as f:  # one column per lesson
        assert next(csv.reader(f)) == ["student_id", *MISTAKES, "total"]
