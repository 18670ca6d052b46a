"""The student release: notebooks/ is what `make release` makes from solutions/ today; it holds
no solution code and no hidden test; every solution passes its own tests (nbgrader validate);
every untouched student notebook fails its graded tests (nbgrader validate --invert)."""
import re

import nbformat
import pytest

from course import release
from course.paths import NOTEBOOKS, SOLUTIONS, lessons
from lesson_runs import BLANK, executed, graded_lessons

pytestmark = pytest.mark.slow

LESSONS = lessons()
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)


@pytest.fixture(scope="module")
def fresh_release(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release")
    release.generate(folder)
    return folder


def code_lines(text):
    return {line.strip() for line in text.splitlines() if line.strip()}


def secret_lines(source_notebook):
    """Lines that occur only inside solution and hidden-test regions of the instructor's notebook."""
    nb = nbformat.read(source_notebook, as_version=4)
    secret, public = set(), set()
    for cell in nb.cells:
        secret |= {line for match in REGION.finditer(cell.source) for line in code_lines(match.group(2))}
        public |= code_lines(REGION.sub("", cell.source))
    return {line for line in secret - public if len(line) > 12 and not line.startswith("#")}


def test_release_is_in_sync_with_solutions(fresh_release):
    problems = release.differences(fresh_release)
    assert not problems, "notebooks/ is out of date; run `make release`:\n" + "\n".join(problems)


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_hides_solutions_and_hidden_tests(lesson):
    source = SOLUTIONS / lesson / f"{lesson}.ipynb"
    student = NOTEBOOKS / lesson / f"{lesson}.ipynb"
    nb = nbformat.read(student, as_version=4)
    text = "\n".join(cell.source for cell in nb.cells)
    for marker in MARKERS:
        assert marker not in text, f"{student} still has '### {marker}'"
    released = set().union(*(code_lines(cell.source) for cell in nb.cells))
    leaked = secret_lines(source) & released
    assert not leaked, f"{student} shows solution or hidden-test lines: {sorted(leaked)}"
    solutions = [cell for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    assert solutions and all("raise NotImplementedError()" in cell.source for cell in solutions)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.lesson_run("lesson")
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_passes_its_own_tests(lesson):
    """nbgrader validate's verdict on the solution, judged on the session's papermill run of it
    (the same execution `nbgrader validate` would repeat; test_notebooks.py shares it)."""
    from nbgrader.preprocessors import CheckCellMetadata
    from nbgrader.validator import Validator

    path, seconds, error = executed(lesson)
    assert path.exists(), f"{lesson} did not run: {error}"
    results = Validator(preprocessors=[CheckCellMetadata]).validate(str(path))
    failed = [f"{cell['source'][:80]}...\n{cell['raw_error'][-800:]}" for cell in results.get("failed", [])]
    assert not results, "solution fails its own tests:\n" + "\n\n".join(failed or [str(results)])


def raising_line(cell):
    """The line of a test cell that raised, as the grader ran it (the guard names the cell
    `<test grade_id>` in tracebacks), or None when it did not raise there."""
    for output in cell.outputs:
        if output.output_type == "error":
            traceback = ANSI_COLOUR.sub("", "\n".join(output.traceback))
            found = re.search(rf"File <test {re.escape(cell.metadata.nbgrader.grade_id)}>:(\d+)", traceback)
            if found:
                return int(found.group(1))
    return None


@pytest.mark.parametrize("lesson", [lesson for lesson in BLANK if lesson in graded_lessons()])
def test_untouched_student_notebook_fails_every_graded_test(graded_class, lesson):
    """nbgrader validate --invert's own verdict on the untouched release, judged on the session's
    graded batch, which executed it as the blank submission (test_autograde_lessons.py shares it).
    The grader runs the hidden tests too, so each test cell must fail in its visible part, which
    is all that validate --invert runs on the release. (Every lesson's release is tried test cell
    by test cell in the typical mistakes' kernels: test_autograde_mistakes.py.)"""
    from nbgrader.preprocessors import CheckCellMetadata
    from nbgrader.validator import Validator

    notebook = graded_class.autograded("blank", lesson)
    assert notebook.exists(), f"the blank {lesson} was not graded: {graded_class.run.stderr[-2000:]}"
    results = Validator(invert=True, preprocessors=[CheckCellMetadata]).validate(str(notebook))
    passed = [cell["source"][:200] for cell in results.get("passed", [])]
    assert not results, "the untouched release passes graded tests:\n" + "\n\n".join(passed or [str(results)])
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            lines = cell.source.splitlines()
            visible = next((i for i, line in enumerate(lines) if "### BEGIN HIDDEN TESTS" in line), len(lines))
            line = raising_line(cell)
            assert line is not None and line <= visible, (
                f"{cell.metadata.nbgrader.grade_id} fails only in its hidden tests (line {line}), "
                f"so its visible test passes on the untouched release")
