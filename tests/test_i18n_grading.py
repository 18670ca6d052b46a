"""A class that mixes languages, graded in one batch as `make autograde` does (python -m course.grade,
which writes the course's source in every language): the session's graded class
(lesson_runs.grade_lessons) holds a perfect and a wrong submission of lessons 1 and 2 in English,
Dutch and Indonesian (small parameters, as a student may set them, except the English perfect one,
the class's perfect student), all handed in as
<student>/<lesson>/ (as nbgrader collect or an LMS export gives them). Each is graded as the
assignment of its notebook's language, as course.lessons' Edition names them (01_basic_loop, 01_basic_loop-nl,
01_basic_loop-id, ...), with the English scores, status "graded" (the translated release's
checksums are nbgrader's own), its failure message in its language (in the autograded notebook
and the feedback), and no hidden test in its feedback. What the instructor reads speaks of
lessons: grades.csv's rows name the lesson and the language, grades_wide.csv and the class report
have one column and one section per lesson.
"""
import csv
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograde.nbgrader_course import nbgrader_environment
from course.lessons import Edition
from course.paths import ROOT
from helpers import language
from lesson_runs import LANGUAGE_MISTAKES as MISTAKES, LANGUAGES, graded_lessons, language_student
from mistake_runs import grade_id

pytestmark = pytest.mark.slow
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


def in_language(lang, english, values):
    previous = language.current_language()
    language.use_language(lang)
    try:
        return language.message(english, **values)
    finally:
        language.use_language(previous)


STUDENTS = {language_student(kind, lang) for lang in LANGUAGES for kind in ("perfect", "wrong")}


@pytest.fixture(scope="module")
def graded_languages(graded_class):
    """(OUT, {(student, nbgrader assignment): grades.csv row}) of the class's rows of lessons 1 and 2."""
    missing = [lesson for lesson in MISTAKES if lesson not in graded_lessons()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not graded in this session (COURSE_GRADED_LESSONS)")
    assert graded_class.run.returncode == 0, graded_class.run.stdout[-2000:] + graded_class.run.stderr[-3000:]
    return graded_class.out, {(student, Edition(lesson, row["language"]).assignment): row
                              for (student, lesson), row in graded_class.rows.items() if lesson in MISTAKES}


def test_each_submission_is_graded_as_its_notebooks_language(graded_languages):
    _, rows = graded_languages
    assert sorted(key for key in rows if key[0] in STUDENTS) == sorted(
        (language_student(kind, lang), Edition(lesson, lang).assignment) for lesson in MISTAKES
        for lang in LANGUAGES for kind in ("perfect", "wrong"))


@pytest.mark.parametrize("lesson", MISTAKES)
def test_every_language_gets_the_english_scores(graded_languages, lesson):
    _, rows = graded_languages
    assert {(row["assignment"], row["language"]) for row in rows.values() if row["assignment"] == lesson} == {
        (lesson, lang) for lang in LANGUAGES}
    for kind in ("perfect", "wrong"):
        english = rows[(language_student(kind, "en"), lesson)]
        for lang in language.TRANSLATED:
            row = rows[(language_student(kind, lang), Edition(lesson, lang).assignment)]
            assert (row["score"], row["max_score"], row["status"]) == (
                english["score"], english["max_score"], "graded"), row
    assert float(rows[("wrong-en", lesson)]["score"]) < float(rows[("perfect", lesson)]["score"])


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("lesson", MISTAKES)
def test_the_failure_message_is_in_the_submissions_language(graded_languages, lesson, lang):
    out, _ = graded_languages
    *_, test_cell, english, values = MISTAKES[lesson]
    expected = in_language(lang, english, values)
    if lang != "en":
        assert expected != english.format(**values)  # translated, or English with its marker
    assignment = Edition(lesson, lang).assignment
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
            student = language_student(kind, lang)
            feedback = html.unescape((out / "feedback" / student / Edition(lesson, lang).assignment
                                      / f"{lesson}.html").read_text())
            leaked = [line for line in secret if line in feedback]
            assert not leaked, f"{student} {lang} {lesson}: {leaked}"


def test_the_class_report_shows_each_lesson_once_and_across_languages(graded_languages):
    out, _ = graded_languages
    report = (out / "report.md").read_text()
    for lesson in MISTAKES:
        assert f"## {lesson} across languages" in report
        assert report.count(f"\n## {lesson}\n") == 1  # one section per lesson, every language in it
    # l1-test-train-one-epoch: in English the perfect, tampering (its scheduler only is wrong) and
    # restructured students pass, the partial, wrong, dying and broken ones fail; the perfect passes
    # in Dutch and Indonesian, the wrong one fails
    assert "| l1-test-train-one-epoch | 3/7 (43 %) | 1/2 (50 %) | 1/2 (50 %) | 5/11 (45 %) |" in report
    assert "| l1-test-train-one-epoch | 5/11 (45 %) |" in report
    with open(out / "grades_wide.csv", newline="") as f:  # one column per lesson, whatever its languages
        assert next(csv.reader(f)) == ["student_id", *sorted(graded_lessons()), "total"]


def test_nbgrader_export_has_a_row_per_language_and_grades_csv_one_per_lesson(graded_languages, tmp_path):
    """docs/grading.md, step 7: nbgrader's own export lists every student in every assignment of the
    gradebook, and each language of a lesson is an assignment of its own (0, with no timestamp, where
    the student handed nothing in); grades.csv has one row per student and lesson."""
    out, rows = graded_languages
    exported = tmp_path / "nbgrader_grades.csv"
    run = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export", "--to", str(exported)],
                         cwd=out, env=nbgrader_environment(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    with open(exported, newline="") as table:
        export = {(row["student_id"], row["assignment"]): row for row in csv.DictReader(table)}
    with open(out / "grades.csv", newline="") as table:
        lessons = [(row["student_id"], row["assignment"], row["language"]) for row in csv.DictReader(table)]
    lesson, dutch = next(iter(MISTAKES)), language_student("perfect", "nl")
    assert (export[(dutch, lesson)]["timestamp"], float(export[(dutch, lesson)]["score"])) == ("", 0.0)
    nl = Edition(lesson, "nl").assignment
    assert float(export[(dutch, nl)]["score"]) == float(rows[(dutch, nl)]["score"]) > 0
    assert float(export[(language_student("perfect", "en"), nl)]["score"]) == 0.0  # English, in the Dutch assignment
    assert [entry for entry in lessons if entry[:2] == (dutch, lesson)] == [(dutch, lesson, "nl")]
    assert not [entry for entry in lessons if entry[1] == nl]  # grades.csv names the lesson, not the assignment
