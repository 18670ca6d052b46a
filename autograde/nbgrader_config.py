"""nbgrader's course configuration: lessons live in solutions/, the student release in notebooks/.

Found by `make lab` (JUPYTER_CONFIG_PATH=autograde) and by the course tools; from a shell, run
nbgrader from the repository root as `JUPYTER_CONFIG_PATH=autograde nbgrader ...`.
Paths come from this file's place, so the current folder does not matter.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository root is the course root
(ROOT / "build" / "exchange").mkdir(parents=True, exist_ok=True)  # gradebook and exchange live here

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.course_id = "efficient-training"
c.CourseDirectory.source_directory = "solutions"     # solutions/<lesson>/<lesson>.ipynb
c.CourseDirectory.release_directory = "notebooks"    # notebooks/<lesson>/<lesson>.ipynb
c.CourseDirectory.submitted_directory = "build/submitted"
c.CourseDirectory.autograded_directory = "build/autograded"
c.CourseDirectory.feedback_directory = "build/feedback"
c.CourseDirectory.solution_directory = "build/solution"
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'build' / 'gradebook.db'}"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "build", "outputs"]
c.Exchange.root = str(ROOT / "build" / "exchange")   # no system folder needed

# A lesson runs in well under a minute with its default parameters; the slides' setting
# (distilbert on a GPU) can take minutes in one cell, so allow that, but never hang forever.
c.ExecutePreprocessor.timeout = 600
c.ExecutePreprocessor.startup_timeout = 120
c.Execute.timeout = 600
c.Execute.interrupt_on_timeout = True

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
