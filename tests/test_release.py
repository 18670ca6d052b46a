"""The student release: notebooks/ is what `make release` makes from solutions/ today; it holds
no solution code and no hidden test; every solution passes its own tests (nbgrader validate);
every untouched student notebook fails its graded tests (nbgrader validate --invert)."""
import re
import subprocess
import sys

import nbformat
import pytest

from autograde.course import nbgrader_environment
from course import release
from course.paths import JUPYTER_CONFIG, NOTEBOOKS, ROOT, SOLUTIONS, lessons
from lesson_runs import executed

LESSONS = lessons()
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
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


def validate(notebook, invert=False):
    command = [sys.executable, "-m", "nbgrader", "validate", str(notebook)] + (["--invert"] if invert else [])
    run = subprocess.run(command, capture_output=True, text=True, env=nbgrader_environment(JUPYTER_CONFIG),
                         cwd=ROOT, timeout=900)
    return run.stdout + run.stderr


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


@pytest.mark.parametrize("lesson", LESSONS)
def test_untouched_student_notebook_fails_every_graded_test(lesson):
    output = validate(NOTEBOOKS / lesson / f"{lesson}.ipynb", invert=True)
    assert "Success! The notebook does not pass any tests." in output, output[-3000:]
