"""A tiny nbgrader assignment (`toy`) and its hostile corpus, for fast end-to-end grading tests.

The toy assignment has a read-only set-up cell (imports and a test helper), two exercises with a
visible and a hidden test each (2 + 3 points) and a third, independent exercise (1 point).
"""
import json
import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HIDDEN_MARKERS = ("HIDDEN-MARKER-ADD", "HIDDEN-MARKER-MEAN")


def _meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"nbgrader": {"grade_id": grade_id, "solution": solution, "grade": grade,
                         "locked": locked, "schema_version": 3}}
    if points is not None:
        meta["nbgrader"]["points"] = points
    return meta


SETUP = "import math\nimport numpy as np\n\ndef close_enough(a, b):\n    return np.allclose(a, b)"
ADD_SOLUTION = "def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION"
ADD_TEST = ("assert add(1, 2) == 3\n### BEGIN HIDDEN TESTS\n"
            "assert add(10, -4) == 6  # HIDDEN-MARKER-ADD\n### END HIDDEN TESTS")
MEAN_SOLUTION = "def mean(xs):\n    ### BEGIN SOLUTION\n    return sum(xs) / len(xs)\n    ### END SOLUTION"
MEAN_TEST = ("assert close_enough(mean([1, 2, 3]), 2.0)\n### BEGIN HIDDEN TESTS\n"
             "assert np.allclose(mean([1.0, 4.0]), 2.5)  # HIDDEN-MARKER-MEAN\n"
             "assert isinstance(mean([1, 2]), float)\n### END HIDDEN TESTS")
SQUARE_SOLUTION = "def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION"
SQUARE_TEST = "assert square(3) == 9\nassert math.isclose(square(0.5), 0.25)"


def source_notebook():
    return new_notebook(cells=[
        new_markdown_cell("# Toy assignment\nWrite `add`, `mean` and `square`."),
        new_code_cell(SETUP, metadata=_meta("setup", locked=True)),
        new_code_cell(ADD_SOLUTION, metadata=_meta("add", solution=True)),
        new_code_cell(ADD_TEST, metadata=_meta("test_add", grade=True, locked=True, points=2)),
        new_code_cell(MEAN_SOLUTION, metadata=_meta("mean", solution=True)),
        new_code_cell(MEAN_TEST, metadata=_meta("test_mean", grade=True, locked=True, points=3)),
        new_code_cell(SQUARE_SOLUTION, metadata=_meta("square", solution=True)),
        new_code_cell(SQUARE_TEST, metadata=_meta("test_square", grade=True, locked=True, points=1)),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


def write_source(root):
    """solutions-like folder: root/toy/toy.ipynb. Returns root."""
    path = Path(root) / "toy" / "toy.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(source_notebook(), path)
    return Path(root)


def cell_index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def answer(release_nb, answers):
    """A copy of the release notebook with solution cells replaced: {grade_id: source}."""
    nb = nbformat.from_dict(json.loads(json.dumps(release_nb)))
    for grade_id, source in answers.items():
        nb.cells[cell_index(nb, grade_id)].source = source
    return nb


PERFECT = {
    "add": "def add(a, b):\n    return a + b",
    "mean": "def mean(xs):\n    return sum(xs) / len(xs)",
    "square": "def square(x):\n    return x * x",
}
WRONG = {"add": "def add(a, b):\n    return a - b", "mean": "def mean(xs):\n    return 0.0"}


def write_class(folder, release_nb, mistakes):
    """folder/student<i>/toy/toy.ipynb for each entry of `mistakes`: None (a perfect answer, 6
    points) or the exercise answered wrongly ("add": 4 points, "mean": 3). Returns folder."""
    for index, mistake in enumerate(mistakes):
        path = Path(folder) / f"student{index}" / "toy" / "toy.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(answer(release_nb, {**PERFECT, **({mistake: WRONG[mistake]} if mistake else {})}),
                       path)
    return Path(folder)


def require_sandbox():
    """Grading tests need kernel isolation: skip, naming what this machine lacks, where it cannot
    isolate (fail instead under COURSE_REQUIRE_SANDBOX=1, as in CI)."""
    from autograde import sandbox
    try:
        sandbox.check_available()
    except sandbox.SandboxError as error:
        if os.environ.get("COURSE_REQUIRE_SANDBOX"):
            pytest.fail(str(error))
        pytest.skip(str(error))
