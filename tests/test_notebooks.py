"""The lessons: each solution notebook runs from top to bottom at its small profile (the session's
run of it, lesson_runs.py; at its defaults: test_lessons_at_defaults.py, in .ci/run); its graded
tests pass without writing to stderr; and the committed notebooks are well formed (no outputs,
stable cell ids, a parameters cell, 2 to 5 exercises): the rules of docs/adding-a-lesson.md."""
import nbformat
import pytest

from course.lessons import PROFILES
from course.paths import lesson_notebooks
from lesson_runs import executed, faults_of_test_cells

pytestmark = pytest.mark.slow

LESSONS = lesson_notebooks()


def nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def test_the_lessons_are_there():
    """A lesson is its notebook plus its row of course/lessons.py (docs/adding-a-lesson.md)."""
    assert [notebook.stem for notebook in LESSONS] == list(PROFILES), "solutions/ and course/lessons.py's rows"


@pytest.mark.parametrize("notebook", LESSONS, ids=lambda path: path.stem)
def test_lesson_is_committed_clean(notebook):
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    ids = [cell.id for cell in nb.cells]
    assert len(set(ids)) == len(ids), "cell ids must be unique"
    assert all(cell_id.startswith(f"l{int(notebook.stem[:2])}-") for cell_id in ids), "cell ids follow the lesson"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"cell {cell.id} has outputs"
    parameters = [cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(parameters) == 1, "one cell tagged `parameters` sets the run size"
    solutions = [cell for cell in nb.cells if nbgrader(cell).get("solution")]
    tests = [cell for cell in nb.cells if nbgrader(cell).get("grade")]
    assert 2 <= len(solutions) <= 5, f"{len(solutions)} exercises; a lesson has 2 to 5"
    assert len(tests) >= len(solutions)
    for cell in tests:
        assert nbgrader(cell)["locked"] and nbgrader(cell)["points"] > 0
    for cell in solutions:
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source


@pytest.mark.lesson_run("notebook")
@pytest.mark.parametrize("notebook", LESSONS, ids=lambda path: path.stem)
def test_lesson_runs(notebook):
    path, seconds, error = executed(notebook.stem)
    assert error is None, f"{notebook.stem} failed after {seconds:.0f} s: {error}"
    problems = faults_of_test_cells(path)
    assert not problems, "\n".join(problems)
