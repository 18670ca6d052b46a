"""Run a lesson once in a kernel, then try mistakes in it one by one (test_autograde_mistakes.py).

check_lesson runs in the lesson runs' worker process (lesson_runs.py): the solution notebook with
small parameters, every cell, in a fresh kernel (the session's run of the lesson, which
test_notebooks.py and test_release.py read); then, if asked, for each mistake, the
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
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell

from autograde.execute import setups_before
from course.i18n import HIDDEN_TESTS
from course.lessons import parameters_cell, with_parameters
from course.paths import SOLUTIONS
from course.run import kernel_config


def grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def small(nb, values):
    """`nb` with small parameters, edited in its parameters cell as a student could."""
    cell = parameters_cell(nb)
    cell.source = with_parameters(cell.source, values)
    return nb


def trusted_setups(nb):
    """{test cell: what the guard runs before it} (autograde.execute.trusted_setup, from the notebook)."""
    cells = [(grade_id(c), c.source) for c in nb.cells if c.cell_type == "code"
             and c.metadata.get("nbgrader", {}).get("locked") and not c.metadata["nbgrader"].get("solution")]
    return setups_before(cells, {grade_id(c) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")})


@dataclass
class LessonRun:
    began: float            # time.monotonic() as the run began (the same clock in every process)
    seconds: float          # executing the lesson's cells (the kernel's start not counted)
    error: str | None       # the first failing cell's error, or None
    rows: list | None       # one per mistake and test cell (see check_lesson); None: not asked, or the lesson failed
    untouched: dict | None  # {test cell: (its visible part failed, it failed)} on the untouched release


def check_lesson(lesson, small_values, out, mistakes=(), stubs=None):
    """The lesson's run, then its mistakes, in one kernel: a LessonRun. The executed notebook (every
    cell, before any mistake) is written to out/<lesson>.ipynb.

    For each (exercise, name, mistaken source, test cells) in `mistakes`: a row (exercise, name,
    test cell, whether its visible part failed on the mistake (Validate), whether it failed with its
    hidden tests (grading), the error it raised on the right answer afterwards or None: its visible
    part, the whole cell after the exercise's last mistake). `untouched` (with `stubs`, {exercise:
    the release's source}): every answer cell set to its stub, then each test cell."""
    began = time.monotonic()
    nb = small(nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4), small_values)
    answers = {grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}
    tests = {grade_id(c): c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
             and not c.metadata["nbgrader"].get("solution")}
    setups = trusted_setups(nb)
    with tempfile.TemporaryDirectory(prefix=f"lesson-{lesson}-") as folder:
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

        with client.setup_kernel():
            start, failed = time.perf_counter(), None
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    try:
                        client.execute_cell(cell, index)
                    except CellExecutionError as raised:
                        failed = f"cell {cell.id}: {raised.ename}: {raised.evalue}"[:500]
                        break
            seconds = time.perf_counter() - start
            nbformat.write(nb, Path(out) / f"{lesson}.ipynb")
            if failed or not mistakes:
                return LessonRun(began, seconds, failed, None, None)
            rows = []
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
        return LessonRun(began, seconds, None, rows, untouched)
