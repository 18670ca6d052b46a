"""The lessons: each solution notebook runs from top to bottom with papermill, with its fast
default parameters; its graded tests pass without writing to stderr; and the committed
notebooks are well formed (no outputs, stable cell ids, a parameters cell, 2 to 5 exercises):
the rules of docs/adding-a-lesson.md."""
import nbformat
import pytest

from course.lessons import PROFILES
from course.paths import lesson_notebooks
from lesson_runs import executed

pytestmark = pytest.mark.slow

LESSONS = lesson_notebooks()
# Generous: the budget is ~30 s on a quiet 2-core CPU; CI machines are often busy.
SECONDS_LIMIT = 240


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
    for cell in nbformat.read(path, as_version=4).cells:
        if nbgrader(cell).get("grade"):
            stderr = [out.text for out in cell.outputs if out.output_type == "stream" and out.name == "stderr"]
            assert not stderr, f"test cell {cell.id} wrote to stderr (nbgrader would score it 0): {stderr}"
            assert any(out.output_type == "stream" and "Correct" in out.text for out in cell.outputs), (
                f"test cell {cell.id} did not print its success message")
    assert seconds < SECONDS_LIMIT, f"{notebook.stem} took {seconds:.0f} s"
