"""`nbgrader validate`, typed in a lesson's folder as docs/students.md shows it.

From notebooks/<lesson>/ (notebooks/nl/<lesson>/ one level deeper):
    JUPYTER_CONFIG_PATH=../../jupyter ../../.venv/bin/nbgrader validate <lesson>.ipynb
Without JUPYTER_CONFIG_PATH nbgrader finds no nbgrader_config.py there (it looks in the current
folder and Jupyter's config folders) and keeps its own 30 s per cell (nbgrader.preprocessors.Execute),
which lesson 0's first cell passes on a busy laptop; the course's jupyter/nbgrader_config.py
allows 600 s. The lesson runs in a copy of the course's layout (its folder, with jupyter/ and .venv
beside notebooks/ as links), so that nothing is written into the checkout.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from answered_notebooks import answered
from course.paths import JUPYTER_CONFIG, NOTEBOOKS, SOLUTIONS

pytestmark = pytest.mark.slow
LESSON = "10_sharded_training"  # the shortest lesson
VENV = Path(sys.executable).parent.parent
CONFIG_PATH = {"en": "../../jupyter", "nl": "../../../jupyter"}  # as docs/students.md gives it
TIMEOUT = ("from nbgrader.apps import ValidateApp\n"
           "app = ValidateApp()\napp.initialize([])\nprint('timeout', app.config.Execute.timeout)")


def lesson_folder(root, language):
    """root/notebooks[/nl]/LESSON/LESSON.ipynb, answered, with root/jupyter and root/.venv."""
    for name, target in (("jupyter", JUPYTER_CONFIG), (".venv", VENV)):
        if not (root / name).exists():
            (root / name).symlink_to(target)
    released = NOTEBOOKS / ("" if language == "en" else language) / LESSON / f"{LESSON}.ipynb"
    folder = root / "notebooks" / ("" if language == "en" else language) / LESSON
    folder.mkdir(parents=True)
    notebook = answered(json.loads(released.read_text()),
                        json.loads((SOLUTIONS / LESSON / f"{LESSON}.ipynb").read_text()))
    (folder / f"{LESSON}.ipynb").write_text(json.dumps(notebook))
    return folder


def readme_env(language):
    env = {key: value for key, value in os.environ.items() if not key.startswith("JUPYTER_CONFIG")}
    return dict(env, JUPYTER_CONFIG_PATH=CONFIG_PATH[language])


def test_the_students_guide_shows_the_command():
    readme = (VENV.parent / "docs" / "students.md").read_text()
    for language, config in CONFIG_PATH.items():
        venv = config.replace("jupyter", ".venv")
        assert f"JUPYTER_CONFIG_PATH={config} {venv}/bin/nbgrader validate" in readme, language


@pytest.mark.parametrize("language", ["en", "nl"])
def test_validate_finds_the_courses_config_from_the_lesson_folder(tmp_path, language):
    folder = lesson_folder(tmp_path, language)
    run = subprocess.run([str(folder / CONFIG_PATH[language].replace("jupyter", ".venv") / "bin" / "python"),
                          "-c", TIMEOUT], cwd=folder, env=readme_env(language),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "No nbgrader_config.py file found" not in run.stderr, run.stderr[-2000:]
    assert "timeout 600" in run.stdout, run.stdout


def test_validate_passes_a_solved_lesson_from_its_folder(tmp_path):
    folder = lesson_folder(tmp_path, "en")
    run = subprocess.run(["../../.venv/bin/nbgrader", "validate", f"{LESSON}.ipynb"], cwd=folder,
                         env=readme_env("en"), capture_output=True, text=True, timeout=900)
    shown = run.stdout + run.stderr
    assert "No nbgrader_config.py file found" not in shown, shown[-3000:]
    assert "Success! Your notebook passes all the tests." in shown, shown[-3000:]
