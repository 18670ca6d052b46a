"""Run a lesson once in a kernel, then try mistakes in it one by one (test_autograde_mistakes.py).

check_lesson runs in a worker process of its own (one per lesson, side by side): the solution
notebook with small parameters, every cell, in a fresh kernel; then, for each mistake, the
mistaken answer, each test cell that must catch it, the right answer again, and the same test cells
once more: their visible part after each mistake, whole after the exercise's last one (the whole
cell, hidden tests and all, is most of the table's cost; a mistake that left something behind
shows already in the visible part, and what stays shows at the end). A test cell runs as the grader
runs it: after the instructor's imports and definitions from the locked cells above it
(autograde.execute.setups_before, what the guard re-runs), first without its hidden tests (what
the student's Validate runs: the release has none), then, where that passed, with them (the
solution notebook has them). A cell whose visible part fails fails at grading too: the hidden
tests are added to it, nothing is taken away.

Last, the untouched release: every answer cell back to its stub at once, as a student who answered
nothing hands it in, and every test cell in turn, visible part then whole. It is nbgrader validate
--invert's question (does any test pass on the release?) and the blank submission's score, asked
of a kernel that still holds what the demonstrations made, so a test cell must fail because of the
stub, not because a cell above it failed.
"""
import re
import tempfile

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell

from autograde.execute import setups_before
from course.i18n import HIDDEN_TESTS
from course.paths import SOLUTIONS
from course.run import kernel_config
from lesson_runs import grade_id, small


def trusted_setups(nb):
    """{test cell: what the guard runs before it} (autograde.execute.trusted_setup, from the notebook)."""
    cells = [(grade_id(c), c.source) for c in nb.cells if c.cell_type == "code"
             and c.metadata.get("nbgrader", {}).get("locked") and not c.metadata["nbgrader"].get("solution")]
    return setups_before(cells, {grade_id(c) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")})


def check_lesson(lesson, small_values, mistakes, stubs):
    """(rows, untouched). For each (exercise, name, mistaken source, test cells) in `mistakes`: a row
    (exercise, name, test cell, whether its visible part failed on the mistake (Validate), whether
    it failed with its hidden tests (grading), the error it raised on the right answer afterwards or
    None: its visible part, the whole cell after the exercise's last mistake). `untouched`: {test
    cell: (its visible part failed, it failed)} with every answer cell set to its stub of `stubs`
    ({exercise: the release's source}). Raises if the lesson itself does not run."""
    nb = small(nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4), small_values)
    answers = {grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}
    tests = {grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
             and not c.metadata["nbgrader"].get("solution")}
    setups = trusted_setups(nb)
    with tempfile.TemporaryDirectory(prefix=f"mistakes-{lesson}-") as folder:
        client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": folder}},
                                config=kernel_config())

        def error(source):
            try:
                client.execute_cell(new_code_cell(source), len(nb.cells) - 1)
            except CellExecutionError as raised:
                return f"{raised.ename}: {raised.evalue}"[:300]
            return None

        def test(cell, hidden=True):
            return error(f"{setups[cell]}\n{tests[cell] if hidden else HIDDEN_TESTS.sub('', tests[cell])}")

        rows = []
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)  # the lesson runs and passes its own tests
            last = {exercise: index for index, (exercise, *_) in enumerate(mistakes)}
            for index, (exercise, name, source, cells) in enumerate(mistakes):
                problem = error(source)
                assert problem is None, f"{exercise}: {name}: the mistake's own cell failed: {problem}"
                at_validate = {cell: test(cell, hidden=False) is not None for cell in cells}
                at_grading = {cell: at_validate[cell] or test(cell) is not None for cell in cells}
                assert error(answers[exercise]) is None
                rows += [(exercise, name, cell, at_validate[cell], at_grading[cell],
                          test(cell, hidden=index == last[exercise])) for cell in cells]
            for exercise, stub in stubs.items():
                error(stub)  # a stub defines its function (which raises when called) or raises itself
            visible = {cell: test(cell, hidden=False) is not None for cell in tests}
            untouched = {cell: (visible[cell], visible[cell] or test(cell) is not None) for cell in tests}
        return rows, untouched
