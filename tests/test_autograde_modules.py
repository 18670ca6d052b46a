"""autograde's pure modules on small notebooks and tables in files, without grading (as nbgrader
tests its preprocessors): what validate.py makes of a submitted file and of a changed structure,
where collect.py routes a submission, what outfolder.py writes, how the class report adds up a
class. The sandboxed end-to-end runs (test_autograde.py, the session's graded class) prove the
same rules through the grader; these fail first, in `make quick`.
"""
import csv
import json
import os
import zipfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograde import class_report, collect, outfolder, report, validate
from autograde.collect import CollectError, Submission


def cell(grade_id, source="pass", *, locked=False, grade=False, kind="code"):
    meta = {"nbgrader": {"grade_id": grade_id, "locked": locked, "grade": grade, "solution": not locked,
                         "schema_version": 3, **({"points": 1} if grade else {})}}
    return (new_code_cell if kind == "code" else new_markdown_cell)(source, metadata=meta)


def release():
    return new_notebook(cells=[cell("setup", "import math", locked=True), cell("answer"),
                               cell("test", "assert True", locked=True, grade=True), cell("other")])


@pytest.fixture
def release_path(tmp_path):
    path = tmp_path / "release.ipynb"
    nbformat.write(release(), path)
    return path


def as_dict(nb):
    return json.loads(nbformat.writes(nb))


def ids(nb):
    return [c["metadata"].get("nbgrader", {}).get("grade_id", "".join(c["source"])) for c in nb["cells"]]


# ---- validate.py ----

@pytest.mark.parametrize("content,kind,detail", [
    (None, "missing", "was not submitted"),
    (b"", "invalid_notebook", "is empty"),
    (b"\xff\xfe", "invalid_notebook", "is not JSON"),
    (b"{\"cells\": ", "invalid_notebook", "is not JSON"),
    (b"[1, 2]", "invalid_notebook", "is JSON but not a notebook"),
    (b"{\"cells\": [{\"cell_type\": \"nonsense\"}]}", "invalid_notebook", "is not a valid notebook"),
])
def test_a_file_that_is_no_notebook_says_what_it_is(tmp_path, content, kind, detail):
    path = tmp_path / "toy.ipynb"
    if content is not None:
        path.write_bytes(content)
    nb, problem = validate.read_submission(path)
    assert nb is None and problem[0] == kind and detail in problem[1], problem


def test_a_link_or_a_folder_is_not_a_notebook(tmp_path, release_path):
    (tmp_path / "folder.ipynb").mkdir()
    (tmp_path / "link.ipynb").symlink_to(release_path)
    for name in ("folder.ipynb", "link.ipynb"):
        assert validate.read_submission(tmp_path / name) == (None, ["invalid_notebook",
                                                                    f"{name} is not a regular file"])


def test_a_notebook_is_read_as_a_dict(release_path):
    nb, problem = validate.read_submission(release_path)
    assert problem is None and ids(nb) == ["setup", "answer", "test", "other"]


def test_an_unchanged_structure_has_no_event(release_path):
    assert validate.check_structure(as_dict(release()), release_path, "toy") == []


@pytest.mark.parametrize("change,event", [
    (lambda cells: [cells[0], cells[1], cells[3]], "toy: cells deleted: test"),
    (lambda cells: cells[:3] + [nbformat.from_dict(dict(cells[2], id="copy")), cells[3]], "toy: cells duplicated: test"),
    (lambda cells: [cells[0], cells[2], cells[1], cells[3]], "toy: cells moved: answer, test"),
    (lambda cells: [cells[0], cell("answer", kind="markdown"), *cells[2:]], "toy: cell type changed: answer"),
    (lambda cells: [cells[0], cells[1], cell("test", "assert 1", locked=True, grade=True), cells[3]],
     "toy: read-only or test cells edited: test"),
])
def test_each_change_of_structure_is_named(release_path, change, event):
    nb = release()
    nb.cells = change(nb.cells)
    assert validate.check_structure(as_dict(nb), release_path, "toy") == [["modified", event]]


def test_a_students_own_cell_is_no_change(release_path):
    nb = release()
    nb.cells.insert(2, new_code_cell("print('trying')"))
    assert validate.check_structure(as_dict(nb), release_path, "toy") == []


def test_the_structure_is_put_back_with_the_students_cells_where_they_were(release_path):
    nb = release()
    mine = new_code_cell("print('mine')")
    nb.cells = [nb.cells[3], nb.cells[1], mine]  # `other` first, `setup` and `test` deleted
    restored = validate.restore_structure(as_dict(nb), release_path)
    assert ids(restored) == ["setup", "answer", "print('mine')", "test", "other"]
    assert "".join(restored["cells"][0]["source"]) == "import math"  # a deleted cell comes back from the release


# A lesson changed after the release: the grader is told the release the student may have fetched.

def changed(nb, edit):
    nb = nbformat.from_dict(json.loads(nbformat.writes(nb)))
    nb.cells = edit(nb.cells)
    return nb


INSTRUCTORS_EDITS = {
    "a test cell changed": lambda cells: [*cells[:2], cell("test", "assert 1 + 1 == 2", locked=True, grade=True),
                                          cells[3]],
    "a cell added": lambda cells: [*cells[:3], cell("test2", "assert 2", locked=True, grade=True), cells[3]],
    "cells reordered": lambda cells: [cells[0], cells[1], cells[3], cells[2]],
}


def students_edit(cells):
    return [*cells[:2], cell("test", "assert 'mine'", locked=True, grade=True), cells[3]]


@pytest.mark.parametrize("edit", INSTRUCTORS_EDITS.values(), ids=INSTRUCTORS_EDITS)
def test_a_submission_of_the_release_before_the_instructors_edit_is_no_change(tmp_path, edit):
    now = tmp_path / "now.ipynb"
    nbformat.write(changed(release(), edit), now)
    fetched = as_dict(release())
    assert validate.check_structure(fetched, now, "toy") != []  # compared with today's release only
    assert validate.check_structure(fetched, now, "toy", [validate.released_cells(release())]) == []


def test_a_test_cell_the_student_edited_is_a_change_whichever_release_they_fetched(tmp_path):
    now = tmp_path / "now.ipynb"
    nbformat.write(changed(release(), INSTRUCTORS_EDITS["a test cell changed"]), now)
    earlier = [validate.released_cells(release())]
    edit = [["modified", "toy: read-only or test cells edited: test"]]
    for fetched in (release(), nbformat.read(now, as_version=4)):
        assert validate.check_structure(as_dict(changed(fetched, students_edit)), now, "toy", earlier) == edit
    # and against the release fetched, not today's: the other changes named are the student's own
    deleted = changed(release(), lambda cells: [cells[0], cells[2], cells[3]])
    assert validate.check_structure(as_dict(deleted), now, "toy", earlier) == [
        ["modified", "toy: cells deleted: answer"]]


def test_an_earlier_release_with_fewer_cells_hides_no_change(release_path):
    """Cells a release does not have count against it: a first draft of one cell is no better match."""
    draft = [validate.released_cells(release())[0]]
    assert validate.check_structure(as_dict(changed(release(), students_edit)), release_path, "toy", [draft]) == [
        ["modified", "toy: read-only or test cells edited: test"]]


def test_an_earlier_release_lists_its_cells_with_a_checksum_of_the_locked_ones():
    cells = validate.released_cells(as_dict(release()))
    assert [(grade_id, kind, bool(checksum)) for grade_id, kind, checksum in cells] == [
        ("setup", "code", True), ("answer", "code", False), ("test", "code", True), ("other", "code", False)]
    assert cells == validate.released_cells(release())  # a dict or a notebook alike


def test_a_cell_the_instructor_removed_since_is_an_ordinary_cell(release_path):
    fetched = changed(release(), lambda cells: [*cells[:3], cell("removed_test", "assert 2", locked=True, grade=True),
                                                cells[3]])
    restored = validate.restore_structure(as_dict(fetched), release_path)
    assert ids(restored) == ["setup", "answer", "test", "assert 2", "other"]
    assert "nbgrader" not in restored["cells"][3]["metadata"]  # nbgrader's OverwriteCells would fail on it


# ---- collect.py ----

def handed_in(root, student, assignment, language=None):
    folder = root / student / assignment
    folder.mkdir(parents=True)
    parameters = new_code_cell(f'course_language = "{language}"' if language else "sizes = 1",
                               metadata={"tags": ["parameters"]})
    nbformat.write(new_notebook(cells=[parameters]), folder / "01_loop.ipynb")


ASSIGNMENTS = {name: ["01_loop"] for name in ("01_loop", "01_loop-nl", "01_loop-id")}


def found(submissions):
    return [(s.student, s.assignment, s.note) for s in submissions]


def test_a_submission_goes_to_the_assignment_of_its_notebooks_language(tmp_path):
    handed_in(tmp_path, "ann", "01_loop", "nl")
    handed_in(tmp_path, "bob", "01_loop")  # no course_language: as handed in
    handed_in(tmp_path, "cas", "01_loop-nl", "id")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work")) == [
        ("ann", "01_loop-nl", ""), ("bob", "01_loop", ""), ("cas", "01_loop-id", "")]


def test_a_lesson_handed_in_in_two_languages_stays_as_handed_in(tmp_path):
    handed_in(tmp_path, "ann", "01_loop", "nl")
    handed_in(tmp_path, "ann", "01_loop-nl", "nl")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work")) == [
        ("ann", "01_loop", ""), ("ann", "01_loop-nl", "")]


def test_a_language_the_course_lacks_is_graded_in_the_assignments_and_said(tmp_path):
    handed_in(tmp_path, "ann", "01_loop-nl", "fr")
    [submission] = collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work")
    assert (submission.assignment, submission.language) == ("01_loop-nl", "nl")
    assert submission.note == "course_language 'fr' is not a language of the course (en, nl, id): graded in Dutch"


def test_folders_that_are_no_student_or_assignment_are_passed_over(tmp_path):
    handed_in(tmp_path, "ann", "01_loop")
    handed_in(tmp_path, "ann", "99_unknown")
    handed_in(tmp_path, ".hidden", "01_loop")
    (tmp_path / "eve").symlink_to(tmp_path / "ann")
    assert found(collect.collect(tmp_path, ASSIGNMENTS, tmp_path / "work")) == [("ann", "01_loop", "")]


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
                                                     row("ann", "01_loop", "5")])
    with open(tmp_path / "grades.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table == [outfolder.COLUMNS, ["ann", "01_loop", "en", "5", "6", "graded", ""],
                     ["ann", "01_loop", "nl", "4", "6", "graded", ""], ["bob", "01_loop", "en", "6", "6", "graded", ""]]
    assert [outfolder.gradebook_assignment(r) for r in outfolder.read_csv(tmp_path / "grades.csv")] == [
        "01_loop", "01_loop-nl", "01_loop"]
    assert os.listdir(tmp_path) == ["grades.csv"]  # replaced atomically: no temporary left


def test_a_table_without_a_language_is_english():
    assert outfolder.gradebook_assignment({"assignment": "01_loop"}) == "01_loop"


def test_the_wide_table_counts_a_lesson_in_two_languages_once_with_the_better_score(tmp_path):
    rows = [row("ann", "01_loop", "5", "nl"), row("ann", "01_loop", "4", "en"), row("ann", "02_acc", "", "en"),
            row("bob", "02_acc", "3", "en")]
    outfolder.write_wide(tmp_path / "wide.csv", rows, report.fmt)
    with open(tmp_path / "wide.csv", newline="") as f:
        assert list(csv.reader(f)) == [["student_id", "01_loop", "02_acc", "total"], ["ann", "5", "0", "5"],
                                       ["bob", "", "3", "3"]]


def test_timings_are_written_and_read_back(tmp_path):
    assert outfolder.read_timings(tmp_path / "timings.csv") == {}
    outfolder.write_timings(tmp_path / "timings.csv", {("ann", "01_loop-nl"): 2.04, ("amy", "01_loop"): 10})
    assert outfolder.read_timings(tmp_path / "timings.csv") == {("amy", "01_loop"): 10.0, ("ann", "01_loop-nl"): 2.0}


# ---- the class report's aggregation and the progress lines ----

def test_a_lesson_in_several_languages_gets_one_table_across_them():
    rows = [row("ann", "01_loop", "6", "en"), row("bob", "01_loop", "0", "en"), row("cas", "01_loop", "3", "nl"),
            row("ann", "02_acc", "6", "en")]
    tests = {("01_loop", "01_loop", "test"): [("ann", "en", True, None), ("bob", "en", False, "AssertionError"),
                                              ("cas", "nl", True, None)],
             ("02_acc", "02_acc", "test"): [("ann", "en", True, None)]}
    assert class_report._across_languages(rows, tests) == [
        ("h2", "01_loop across languages"),
        ("table", [["", "en", "nl", "all"], ["mean score (submissions)", "3.00 (2)", "3.00 (1)", "3.00 (3)"],
                   ["test", "1/2 (50 %)", "1/1 (100 %)", "2/3 (67 %)"]])]


def test_the_markdown_report_escapes_a_pipe_in_a_message():
    blocks = [("h2", "01_loop"), ("table", [["test cell", "messages"], ["test", "a | b"]]), ("p", "end")]
    assert class_report.to_markdown(blocks) == (
        "## 01_loop\n\n| test cell | messages |\n|---|---|\n| test | a \\| b |\n\nend\n")


def test_the_summary_counts_the_failed_and_the_noted():
    rows = [dict(row("a", "t", "6"), status=status) for status in ("graded", "timeout", "modified", "timeout")]
    assert report.summary(rows, 12.34, 2, kept=1) == (
        "Graded 3 submissions in 12.3 s with 2 parallel jobs and kept 1 already graded (resumed): 4 in all, "
        "2 graded, 2 failed.\nFailed, by kind: timeout 2\nGraded with notes: modified 1")
    assert [report.clock(s) for s in (0, 65, 3725)] == ["0:00", "1:05", "1:02:05"]
