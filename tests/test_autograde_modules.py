"""autograde's pure modules on small notebooks and tables in files, without grading (as nbgrader
tests its preprocessors): where collect.py routes a submission, and the lesson and language
columns of outfolder.py's tables and of the class report. The other rules of outfolder.py, of
validate.py, of the class report and of the progress lines have a test file named after their
module. The sandboxed end-to-end runs (test_autograde.py, the session's graded class) prove the
same rules through the grader; these fail first, in `make quick`.
"""
import csv
import os
import sqlite3
import subprocess
import sys
import zipfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograde import class_report, collect, nbgrader_course, outfolder, report
from autograde.collect import CollectError, Submission
from autograde.variants import Variants
from autograde_toy import write_source


# ---- collect.py ----

def handed_in(root, student, assignment, language=None):
    folder = root / student / assignment
    folder.mkdir(parents=True)
    parameters = new_code_cell(f'course_language = "{language}"' if language else "sizes = 1",
                               metadata={"tags": ["parameters"]})
    nbformat.write(new_notebook(cells=[parameters]), folder / "01_loop.ipynb")


ASSIGNMENTS = {name: ["01_loop"] for name in ("01_loop", "01_loop-nl", "01_loop-id")}
# the variants table of ASSIGNMENTS, as a course tells it (autograde/variants.py)
VARIANTS = Variants({name: {"lesson": "01_loop", "language": language, "parameters": {}}
                     for name, language in zip(ASSIGNMENTS, ("en", "nl", "id"))},
                    {"en": {"name": "English"}, "nl": {"name": "Dutch"}, "id": {"name": "Indonesian"}})


def found(submissions):
    return [(s.student, s.assignment, s.note) for s in submissions]


def test_a_submission_goes_to_the_assignment_of_its_notebooks_language(tmp_path):
    handed_in(tmp_path, "ann", "01_loop", "nl")
    handed_in(tmp_path, "bob", "01_loop")  # no course_language: as handed in
    handed_in(tmp_path, "cas", "01_loop-nl", "id")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work", variants=VARIANTS)) == [
        ("ann", "01_loop-nl", ""), ("bob", "01_loop", ""), ("cas", "01_loop-id", "")]


def test_a_lesson_handed_in_in_two_languages_stays_as_handed_in(tmp_path):
    handed_in(tmp_path, "ann", "01_loop", "nl")
    handed_in(tmp_path, "ann", "01_loop-nl", "nl")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work", variants=VARIANTS)) == [
        ("ann", "01_loop", ""), ("ann", "01_loop-nl", "")]


def test_a_language_the_course_lacks_is_graded_in_the_assignments_and_said(tmp_path):
    handed_in(tmp_path, "ann", "01_loop-nl", "fr")
    [submission] = collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work", variants=VARIANTS)
    assert (submission.assignment, submission.language) == ("01_loop-nl", "nl")
    assert submission.note == "course_language 'fr' is not a language of the course (en, nl, id): graded in Dutch"


def test_folders_that_are_no_student_or_assignment_are_passed_over(tmp_path):
    handed_in(tmp_path, "ann", "01_loop")
    handed_in(tmp_path, "ann", "99_unknown")
    handed_in(tmp_path, ".hidden", "01_loop")
    (tmp_path / "eve").symlink_to(tmp_path / "ann")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work", variants=VARIANTS)) == [("ann", "01_loop", "")]


def test_an_lms_zip_is_collected_by_its_file_names_and_unpacked_safely(tmp_path):
    archive = tmp_path / "export.zip"
    notebook = nbformat.writes(new_notebook(cells=[]))
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("jdoe_123_assignsubmission_file_01_loop.ipynb", notebook)
        zf.writestr("folder/amy lee_9_01_loop.ipynb", notebook)  # a Moodle-like folder per submission
        zf.writestr("../escape_01_loop.ipynb", notebook)
        zf.writestr("carol_notes.txt", "not a notebook")
    work = tmp_path / "work"
    submissions = collect.collect(archive, {"01_loop": ["01_loop"]}, work)
    assert found(submissions) == [("folder", "01_loop", ""), ("jdoe", "01_loop", "")]
    assert all((s.folder / "01_loop.ipynb").is_file() for s in submissions)
    assert not (tmp_path / "escape_01_loop.ipynb").exists()
    with pytest.raises(CollectError, match="no notebook of this course"):
        collect.collect(archive, {"02_other": ["02_other"]}, work)


def test_a_path_that_is_neither_a_folder_nor_a_zip_is_refused(tmp_path):
    with pytest.raises(CollectError, match="no such file or folder"):
        collect.collect(tmp_path / "nowhere", ASSIGNMENTS, tmp_path / "work")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CollectError, match="neither a folder nor a zip file"):
        collect.collect(tmp_path / "notes.txt", ASSIGNMENTS, tmp_path / "work")


def test_the_grader_copies_the_notebook_and_the_exchanges_files_only(tmp_path):
    folder = tmp_path / "in" / "ann" / "01_loop"
    folder.mkdir(parents=True)
    for name in ("01_loop.ipynb", "timestamp.txt", "submission_secret.txt", "other.py"):
        (folder / name).write_text(name)
    (folder / "01_loop.ipynb").unlink()
    (folder / "01_loop.ipynb").mkdir()  # not a file: stays visible as such to the validator
    target = collect.copy_submission(Submission("ann", "01_loop", folder), ["01_loop"], tmp_path / "out")
    assert sorted(p.name for p in target.iterdir()) == ["01_loop.ipynb", "submission_secret.txt", "timestamp.txt"]
    assert (target / "01_loop.ipynb").is_dir() and (target / "timestamp.txt").read_text() == "timestamp.txt"


# ---- outfolder.py ----

def row(student, assignment, score, language=None):
    found = {"student_id": student, "assignment": assignment, "score": score, "max_score": "6",
             "status": "graded", "detail": ""}
    return found if language is None else dict(found, language=language)


def test_grades_name_the_lesson_and_its_language_sorted(tmp_path):
    outfolder.write_grades(tmp_path / "grades.csv", [row("bob", "01_loop", "6"), row("ann", "01_loop-nl", "4"),
                                                     row("ann", "01_loop", "5")], VARIANTS)
    with open(tmp_path / "grades.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table == [outfolder.COLUMNS, ["ann", "01_loop", "en", "5", "6", "graded", ""],
                     ["ann", "01_loop", "nl", "4", "6", "graded", ""], ["bob", "01_loop", "en", "6", "6", "graded", ""]]
    assert [outfolder.gradebook_assignment(r, VARIANTS) for r in outfolder.read_csv(tmp_path / "grades.csv")] == [
        "01_loop", "01_loop-nl", "01_loop"]
    assert os.listdir(tmp_path) == ["grades.csv"]  # replaced atomically: no temporary left


def test_a_table_without_a_language_is_english():
    assert outfolder.gradebook_assignment({"assignment": "01_loop", "language": "en"}, VARIANTS) == "01_loop"
    assert outfolder.gradebook_assignment({"assignment": "01_loop"}, VARIANTS) == "01_loop"


def test_without_a_variants_table_each_assignment_is_its_own_lesson(tmp_path):
    outfolder.write_grades(tmp_path / "grades.csv", [row("ann", "01_loop-nl", "4")], outfolder.read_variants(tmp_path))
    [graded] = outfolder.read_csv(tmp_path / "grades.csv")
    assert (graded["assignment"], graded["language"]) == ("01_loop-nl", "")
    assert outfolder.gradebook_assignment(graded, Variants()) == "01_loop-nl"


def test_the_variants_table_is_kept_in_out_as_told(tmp_path):
    outfolder.write_variants(tmp_path, VARIANTS)
    assert outfolder.read_variants(tmp_path) == VARIANTS


def test_the_wide_table_counts_a_lesson_in_two_languages_once_with_the_better_score(tmp_path):
    rows = [row("ann", "01_loop", "5", "nl"), row("ann", "01_loop", "4", "en"), row("ann", "02_acc", "", "en"),
            row("bob", "02_acc", "3", "en")]
    outfolder.write_wide(tmp_path / "wide.csv", rows, report.fmt)
    with open(tmp_path / "wide.csv", newline="") as f:
        assert list(csv.reader(f)) == [["student_id", "01_loop", "02_acc", "total"], ["ann", "5", "0", "5"],
                                       ["bob", "", "3", "3"]]


# ---- the class report's lessons across languages ----

def test_a_lesson_in_several_languages_gets_one_table_across_them():
    rows = [row("ann", "01_loop", "6", "en"), row("bob", "01_loop", "0", "en"), row("cas", "01_loop", "3", "nl"),
            row("ann", "02_acc", "6", "en")]
    tests = {("01_loop", "01_loop", "test"): [("ann", "en", True, None), ("bob", "en", False, "AssertionError"),
                                              ("cas", "nl", True, None)],
             ("02_acc", "02_acc", "test"): [("ann", "en", True, None)]}
    assert class_report._across_languages(rows, tests, ["en", "nl", "id"]) == [
        ("h2", "01_loop across languages"),
        ("table", [["", "en", "nl", "all"], ["mean score (submissions)", "3.00 (2)", "3.00 (1)", "3.00 (3)"],
                   ["test", "1/2 (50 %)", "1/1 (100 %)", "2/3 (67 %)"]])]


# ---- nbgrader_course.py ----

def test_a_new_gradebook_records_the_revision_that_nbgraders_alembic_command_names(tmp_path):
    """The revision is read in the grader's process (head_revision_in_process), not by the `alembic`
    command nbgrader runs: the gradebook must hold what that command answers, or a later nbgrader
    would migrate it wrongly."""
    out = nbgrader_course.prepare(write_source(tmp_path / "source"), tmp_path / "out", {"toy": ["toy"]})
    with sqlite3.connect(out / "gradebook.db") as db:
        [(recorded,)] = db.execute("SELECT version_num FROM alembic_version").fetchall()
    from nbgrader.dbutil import _temp_alembic_ini
    with _temp_alembic_ini(f"sqlite:///{tmp_path}/unused.db") as ini:
        heads = subprocess.run([os.path.join(os.path.dirname(sys.executable), "alembic"), "-c", ini, "heads"],
                               capture_output=True, text=True, check=True).stdout
    assert recorded == heads.split()[0]
