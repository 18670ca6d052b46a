"""autograde/validate.py on small notebooks in files, without grading: what a submitted file is
(read_submission's kinds), which changes of the course's structure are named (check_structure's
events, also against an earlier release of a lesson the instructor changed since), and how the
structure is put back before grading (restore_structure). The hostile corpus
(test_autograde.py) proves the same through the grader; these fail first, in `make quick`."""
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograde import validate


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


# ---- read_submission: what a submitted file is ----

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


def test_a_notebook_over_the_size_limit_is_not_read(release_path, monkeypatch):
    monkeypatch.setattr(validate, "MAX_NOTEBOOK_BYTES", release_path.stat().st_size - 1)
    nb, problem = validate.read_submission(release_path)
    assert nb is None and problem == ["invalid_notebook",
                                      f"release.ipynb is larger than {release_path.stat().st_size - 1} bytes"]


def test_a_notebook_is_read_as_a_dict(release_path):
    nb, problem = validate.read_submission(release_path)
    assert problem is None and ids(nb) == ["setup", "answer", "test", "other"]
    assert isinstance(nb, dict) and not isinstance(nb, nbformat.NotebookNode)


def test_an_old_notebook_is_read_in_version_4(tmp_path):
    """A notebook of format 3 (`worksheets`, no `cells`) is a notebook: it is read as version 4."""
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [
        {"cells": [{"cell_type": "code", "input": "x = 1", "language": "python", "outputs": [],
                    "metadata": {}}], "metadata": {}}]}))
    nb, problem = validate.read_submission(path)
    assert problem is None and nb["nbformat"] == 4 and ["".join(c["source"]) for c in nb["cells"]] == ["x = 1"]


# ---- check_structure: the changes of the course's cells, named ----

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


def test_several_changes_are_each_named_once(release_path):
    nb = release()
    edited_setup = cell("setup", "import os", locked=True)
    nb.cells = [nb.cells[3], edited_setup, edited_setup, nb.cells[1]]  # `test` deleted, `other` first:
    # every course cell out of its place is named (`answer` is third, not second)
    assert validate.check_structure(as_dict(nb), release_path, "toy") == [
        ["modified", "toy: cells deleted: test"], ["modified", "toy: cells duplicated: setup"],
        ["modified", "toy: cells moved: answer, other, setup"], ["modified", "toy: read-only or test cells edited: setup"]]


def test_a_students_own_cell_and_an_edited_answer_are_no_change(release_path):
    nb = release()
    nb.cells[1] = cell("answer", "def answer():\n    return 42")  # an answer cell is the student's to edit
    nb.cells.insert(2, new_code_cell("print('trying')"))
    assert validate.check_structure(as_dict(nb), release_path, "toy") == []


def test_a_source_as_a_list_of_lines_is_the_same_source(release_path):
    nb = as_dict(release())
    nb["cells"][2]["source"] = ["assert ", "True"]  # as some editors write a cell's source
    assert validate.check_structure(nb, release_path, "toy") == []


# ---- restore_structure: the release's cells, once each and in its order ----

def test_the_structure_is_put_back_with_the_students_cells_where_they_were(release_path):
    nb = release()
    mine = new_code_cell("print('mine')")
    nb.cells = [nb.cells[3], nb.cells[1], mine]  # `other` first, `setup` and `test` deleted
    restored = validate.restore_structure(as_dict(nb), release_path)
    assert ids(restored) == ["setup", "answer", "print('mine')", "test", "other"]
    assert "".join(restored["cells"][0]["source"]) == "import math"  # a deleted cell comes back from the release


def test_the_students_answer_stays_and_a_duplicate_follows_its_first(release_path):
    nb = release()
    answer = cell("answer", "x = 42")
    nb.cells = [nb.cells[0], answer, nb.cells[2], answer, nb.cells[3]]
    restored = validate.restore_structure(as_dict(nb), release_path)
    assert ids(restored) == ["setup", "answer", "test", "answer", "other"]  # nbgrader de-duplicates later
    assert "".join(restored["cells"][1]["source"]) == "x = 42"


def test_cells_before_the_first_course_cell_stay_first(release_path):
    nb = release()
    nb.cells.insert(0, new_markdown_cell("my notes"))
    restored = validate.restore_structure(as_dict(nb), release_path)
    assert ids(restored) == ["my notes", "setup", "answer", "test", "other"]
    assert restored["metadata"] == as_dict(nb)["metadata"]  # the rest of the notebook as submitted


# ---- check_structure and restore_structure after the lesson changed: the grader is told the release
# the student may have fetched ----

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


def test_moved_cells_do_not_make_an_earlier_release_look_fetched(release_path):
    """One moved cell shifts every cell after it: against an earlier release in that order, with a
    cell since removed, the submission would count one change instead of four, and the report
    would name a deletion the student never made (seen on lesson 7's restructured submission)."""
    moved_first = changed(release(), lambda cells: [cells[3], *cells[:3]])
    earlier = [validate.released_cells(changed(release(), lambda cells: [cells[3], *cells[:3], cell("gone")]))]
    events = validate.check_structure(as_dict(moved_first), release_path, "toy", earlier)
    assert events == [["modified", "toy: cells moved: answer, other, setup, test"]]


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
