"""nbgrader's course configuration: lessons live in solutions/, the student release in notebooks/.

Found by `make lab` and `make release` (JUPYTER_CONFIG_PATH=jupyter); from a shell, run nbgrader
as `JUPYTER_CONFIG_PATH=jupyter .venv/bin/nbgrader ...`. Paths come from course.paths, so the
current folder does not matter.
"""
from course.paths import BUILD, ROOT

(BUILD / "exchange").mkdir(parents=True, exist_ok=True)  # gradebook and exchange live in build/

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.course_id = "efficient-training"
c.CourseDirectory.source_directory = "solutions"     # solutions/<lesson>/<lesson>.ipynb
c.CourseDirectory.release_directory = "notebooks"    # notebooks/<lesson>/<lesson>.ipynb
c.CourseDirectory.submitted_directory = "build/submitted"
c.CourseDirectory.autograded_directory = "build/autograded"
c.CourseDirectory.feedback_directory = "build/feedback"
c.CourseDirectory.solution_directory = "build/solution"
c.CourseDirectory.db_url = f"sqlite:///{BUILD / 'gradebook.db'}"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "build", "outputs"]
c.Exchange.root = str(BUILD / "exchange")   # no system folder needed

# A lesson runs in well under a minute with its default parameters; the slides' setting
# (distilbert on a GPU) can take minutes in one cell, so allow that, but never hang forever.
c.ExecutePreprocessor.timeout = 600
c.ExecutePreprocessor.startup_timeout = 120
c.Execute.timeout = 600
c.Execute.interrupt_on_timeout = True

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
