"""The output folder as an nbgrader course: source/ (a copy of the sources), release/, the
gradebook, submitted/, autograded/, feedback/ and an nbgrader_config.py, so that `nbgrader
formgrader` and `nbgrader generate_feedback` work there for manual review after the batch; and
the variants table it was told (variants.json)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .outfolder import write_variants
from .variants import Variants

OUT_CONFIG = '''\
# Written by `python -m autograde`: this folder is an nbgrader course (gradebook, submissions,
# autograded notebooks, feedback). Feedback generated here never shows hidden tests, and names
# each test cell by its exercise (autograde/feedback_page.py).
import os
c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.GenerateFeedback.preprocessors = {preprocessors!r}
c.HideHiddenTests.texts = {texts!r}
{template}# release_feedback skips (and names) a feedback folder without submission_secret.txt
c.ExchangeFactory.release_feedback = "autograde.exchange.ReleaseFeedback"
'''


class CourseError(RuntimeError):
    pass


def ensure_venv_on_path():
    """nbgrader's Gradebook runs the `alembic` command: find it next to this Python."""
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def nbgrader_environment(config_path=None):
    """An environment for an nbgrader command: this venv's tools on PATH, and only the config of
    `config_path` (None: only the course folder's own nbgrader_config.py)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("JUPYTER_CONFIG")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    if config_path:
        env["JUPYTER_CONFIG_PATH"] = str(config_path)
    return env


def head_revision_in_process():
    """nbgrader's Gradebook, creating a gradebook, asks the `alembic` command for the newest revision
    of its database's migrations: a Python of its own that imports alembic, about 2 CPU s for each
    new gradebook (each grading's OUT, each release). The same answer, read in this process from
    nbgrader's migration scripts; the gradebook then records it as nbgrader does."""
    import nbgrader.api
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR
    nbgrader.api.get_alembic_version = ScriptDirectory(ALEMBIC_DIR).get_current_head


# nbgrader's generate_assignment for several assignments in one Python: nbgrader's imports and the
# gradebook's set-up are paid once, not once per assignment (about 4 CPU s each).
GENERATE_ASSIGNMENTS = """\
import sys
from autograde.nbgrader_course import head_revision_in_process
from nbgrader.apps.generateassignmentapp import GenerateAssignmentApp
head_revision_in_process()
options = [arg for arg in sys.argv[1:] if arg.startswith("--")]
for name in [arg for arg in sys.argv[1:] if not arg.startswith("--")]:
    app = GenerateAssignmentApp()  # a new app for each, as `nbgrader generate_assignment NAME` makes
    app.initialize([name, *options])
    app.start()
"""


def generate_assignments(names, root, release_directory, db_url, source_directory=None, config_path=None):
    """`nbgrader generate_assignment NAME` for each of `names` in the course folder `root`: stubs the
    solutions, removes hidden tests, records the locked cells' checksums. Raises CourseError when
    nbgrader refuses."""
    options = ["--force", "--log-level=WARN", f"--CourseDirectory.root={root}",
               f"--CourseDirectory.release_directory={release_directory}", f"--CourseDirectory.db_url={db_url}"]
    if source_directory:
        options.append(f"--CourseDirectory.source_directory={source_directory}")
    run = subprocess.run([sys.executable, "-c", GENERATE_ASSIGNMENTS, *options, *names], cwd=root,
                         capture_output=True, text=True, env=nbgrader_environment(config_path))
    if run.returncode != 0:
        raise CourseError(f"nbgrader generate_assignment {' '.join(names)} failed:\n"
                          f"{run.stdout[-2000:]}{run.stderr[-2000:]}")


def assignments_in(source_root):
    """{assignment: [notebook names]} for every folder of source_root holding notebooks."""
    found = {}
    for folder in sorted(Path(source_root).iterdir()):
        notebooks = sorted(p.stem for p in folder.glob("*.ipynb")) if folder.is_dir() else []
        if notebooks and not folder.name.startswith("."):
            found[folder.name] = notebooks
    if not found:
        raise CourseError(f"no assignments (folders with notebooks) in {source_root}")
    return found


def prepare(source_root, out, assignments, variants=Variants()):
    """Copy the sources into OUT/source and (re)generate the release and the gradebook's
    assignment records with nbgrader; keep the variants table. Raises CourseError when nbgrader
    refuses the sources."""
    from .feedback import FEEDBACK_PREPROCESSORS
    from .feedback_page import TEMPLATE_SETTINGS
    ensure_venv_on_path()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    template = "".join(f"c.HTMLExporter.{name} = {value!r}\n" for name, value in TEMPLATE_SETTINGS.items())
    (out / "nbgrader_config.py").write_text(OUT_CONFIG.format(preprocessors=FEEDBACK_PREPROCESSORS,
                                                              texts=variants.texts(), template=template))
    write_variants(out, variants)
    for assignment in assignments:
        target = out / "source" / assignment
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(Path(source_root) / assignment, target,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    generate_assignments(list(assignments), root=out, source_directory="source", release_directory="release",
                         db_url=f"sqlite:///{out}/gradebook.db")
    return out
