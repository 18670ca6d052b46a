"""The output folder as an nbgrader course: source/ (a copy of solutions/), release/, the gradebook,
submitted/, autograded/, feedback/ and an nbgrader_config.py, so that `nbgrader formgrader` and
`nbgrader generate_feedback` work there for manual review after the batch."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

OUT_CONFIG = '''\
# Written by `python -m autograde`: this folder is an nbgrader course (gradebook, submissions,
# autograded notebooks, feedback). Feedback generated here never shows hidden tests.
import os
c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.GenerateFeedback.preprocessors = {preprocessors!r}
'''


class CourseError(RuntimeError):
    pass


def ensure_venv_on_path():
    """nbgrader's Gradebook runs the `alembic` command: find it next to this Python."""
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


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


def prepare(source_root, out, assignments):
    """Copy the sources into OUT/source and (re)generate the release and the gradebook's
    assignment records with nbgrader. Raises CourseError when nbgrader refuses the sources."""
    from .feedback import FEEDBACK_PREPROCESSORS
    ensure_venv_on_path()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    (out / "nbgrader_config.py").write_text(OUT_CONFIG.format(preprocessors=FEEDBACK_PREPROCESSORS))
    for assignment in assignments:
        target = out / "source" / assignment
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(Path(source_root) / assignment, target,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force",
                   f"--CourseDirectory.root={out}", "--CourseDirectory.source_directory=source",
                   "--CourseDirectory.release_directory=release",
                   f"--CourseDirectory.db_url=sqlite:///{out}/gradebook.db", "--log-level=WARN"]
        # Only OUT's own config: the course's (JUPYTER_CONFIG_PATH=autograde) would send the
        # release into notebooks/ and the records into build/gradebook.db.
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_CONFIG")}
        run = subprocess.run(command, cwd=out, capture_output=True, text=True, env=env)
        if run.returncode != 0:
            raise CourseError(f"nbgrader generate_assignment {assignment} failed:\n"
                              f"{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return out
