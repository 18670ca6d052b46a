"""Each lesson's solution notebook, executed once per test session with papermill.

test_notebooks.py (does it run?) and test_release.py (does it pass its own tests, as nbgrader
validate judges them?) share these runs, so that no lesson is executed twice.
"""
import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from course.run import lesson_notebooks, run_notebook

FOLDER = Path(tempfile.mkdtemp(prefix="lesson-runs-"))
atexit.register(shutil.rmtree, FOLDER, True)


@functools.lru_cache(maxsize=None)
def executed(lesson):
    """(path of the executed notebook, seconds, error message or None) for `lesson`."""
    [notebook] = lesson_notebooks([lesson])
    seconds, error = run_notebook(notebook, FOLDER)
    return FOLDER / notebook.name, seconds, error
