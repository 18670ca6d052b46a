"""course/release_history.py: the lessons' earlier releases that the grader is told
(--earlier-releases), read from a course's git history, in every language."""
import subprocess

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from autograde.validate import released_cells
from course.paths import NOTEBOOKS, ROOT
from course.release_history import earlier_releases

LESSON = "01_basic_loop"


def release(test_source):
    meta = {"nbgrader": {"grade_id": "l1-test", "locked": True, "grade": True, "solution": False,
                         "points": 1, "schema_version": 3}}
    return new_notebook(cells=[new_code_cell(test_source, metadata=meta)])


def write(root, folder, nb):
    path = root / (folder / LESSON / f"{LESSON}.ipynb").relative_to(ROOT)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def git(root, *args):
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


def test_every_committed_release_and_the_working_trees_count(tmp_path):
    git(tmp_path, "init", "-q")
    first, second, uncommitted, dutch = (release(f"assert {n}") for n in range(1, 5))
    for nb in (first, second):
        write(tmp_path, NOTEBOOKS, nb)
        write(tmp_path, NOTEBOOKS / "nl", dutch)
        (tmp_path / "unrelated.txt").write_text(str(nb.cells[0].source))  # a commit of something else too
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", "a release")
    write(tmp_path, NOTEBOOKS, uncommitted)  # released on the hub, not committed yet
    table = earlier_releases([LESSON], root=tmp_path)
    assert table[LESSON] == {LESSON: [released_cells(nb) for nb in (second, first, uncommitted)]}
    assert table[f"{LESSON}-nl"] == {LESSON: [released_cells(dutch)]}  # the same version once
    assert table[f"{LESSON}-id"] == {LESSON: []}


def test_outside_git_only_the_working_trees_release_counts(tmp_path):
    write(tmp_path, NOTEBOOKS, release("assert 1"))
    assert earlier_releases([LESSON], root=tmp_path)[LESSON] == {LESSON: [released_cells(release("assert 1"))]}
