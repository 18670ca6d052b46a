"""Grade one submission (one student, one assignment) in a private nbgrader course folder.

Run by the parent as `python -m autograde.grade JOB.json` (trusted, as the grader's user); only
the kernel it starts runs student code, inside autograde.sandbox. Writes RESULT.json next to the
job: status, detail, per-test verdicts, and where the autograded notebook and feedback are.
"""
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput,
                                    DeduplicateIds, IgnorePattern, LimitOutput, OverwriteCells,
                                    OverwriteKernelspec)
from traitlets.config import Config

from .course import ensure_venv_on_path
from .execute import (DropEmptyNbgraderMetadata, GuardedExecute, VerdictSaveAutoGrades,
                      trusted_setup)
from .feedback import FEEDBACK_PREPROCESSORS
from .profile import GRADING_PARAMETERS, InjectGradingParameters
from .validate import check_structure, read_submission

# Most telling first: the row's status is the first kind that happened; detail lists them all.
STATUS_ORDER = ["error", "missing", "invalid_notebook", "timeout", "kernel_died", "memory_limit",
                "sys_exit", "tampered", "modified", "output_truncated", "graded"]


def grade(job):
    started = time.monotonic()
    work = Path(job["work"])
    course = work / "course"
    student, assignment = job["student"], job["assignment"]
    events = []
    submitted = course / "submitted" / student / assignment
    submitted.mkdir(parents=True)
    (course / "source").mkdir()
    (course / "source" / assignment).symlink_to(Path(job["out"]) / "source" / assignment)
    shutil.copy(job["template_db"], course / "gradebook.db")
    release_dir = Path(job["out"]) / "release" / assignment
    valid = []
    for notebook in job["notebooks"]:
        nb, problem = read_submission(Path(job["submission"]) / f"{notebook}.ipynb")
        if problem:
            events.append(problem)
            continue
        events.extend(check_structure(nb, release_dir / f"{notebook}.ipynb", notebook))
        (submitted / f"{notebook}.ipynb").write_text(json.dumps(nb))
        valid.append(notebook)
    timestamp = Path(job["submission"]) / "timestamp.txt"
    if timestamp.is_file() and not timestamp.is_symlink() and timestamp.stat().st_size < 100:
        shutil.copy(timestamp, submitted / "timestamp.txt")

    verdicts, timing = {}, {}
    if valid:
        log_path = work / "nbgrader.log"
        for notebook in valid:
            report = work / f"execute-{notebook}.json"
            config = _config(job, course, notebook, report, release_dir / f"{notebook}.ipynb")
            coursedir = CourseDirectory(config=config)
            converter = Autograde(coursedir=coursedir, config=config)
            converter.log = _file_logger(log_path)
            try:
                converter.start()
            except Exception as error:  # nbgrader already logged the traceback
                events.append(["error", f"nbgrader autograde failed on {notebook}: {error}"[:300]])
            if report.exists():
                execution = json.loads(report.read_text())
                events.extend(execution["events"])
                verdicts.update({f"{notebook}/{k}": v for k, v in execution["verdicts"].items()})
        graded_at = time.monotonic()
        _feedback(job, course, log_path, events)
        timing["autograde_s"] = round(graded_at - started, 2)
        timing["feedback_s"] = round(time.monotonic() - graded_at, 2)
    result = {"timing": timing, "events": events, "verdicts": verdicts, "course": str(course),
              "status": _status(events), "detail": "; ".join(_unique(d for _, d in events))}
    (work / "result.json").write_text(json.dumps(result))
    return result


def _config(job, course, notebook, report, release_path):
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.assignment_id = job["assignment"]
    config.CourseDirectory.student_id = job["student"]
    config.CourseDirectory.notebook_id = notebook
    config.Autograde.autograde_preprocessors = [
        InjectGradingParameters,  # grading profile hook (with the line below)
        GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
        VerdictSaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.Autograde.sanitize_preprocessors = [
        ClearOutput, DeduplicateIds, DropEmptyNbgraderMetadata, OverwriteKernelspec,
        OverwriteCells, CheckCellMetadata]
    config.OverwriteCells.add_missing_cells = True
    config.InjectGradingParameters.parameters = job.get("parameters", GRADING_PARAMETERS)
    limits = job["limits"]
    execute = config.GuardedExecute
    execute.sandbox_spec = job.get("sandbox_spec")
    execute.scratch = job["scratch"]
    execute.cell_timeout = limits["cell_timeout"]
    execute.submission_timeout = limits["submission_timeout"]
    execute.max_output_bytes = limits["output_bytes"]
    execute.protected_packages = job["protected_packages"]
    execute.preload = job["preload"]
    execute.report_path = str(report)
    execute.trusted_setup = trusted_setup(f"sqlite:///{course}/gradebook.db", job["assignment"],
                                          notebook, release_path)
    execute.startup_timeout = 120
    execute.iopub_timeout = 10
    return config


def _feedback(job, course, log_path, events):
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.assignment_id = job["assignment"]
    config.CourseDirectory.student_id = job["student"]
    config.GenerateFeedback.preprocessors = FEEDBACK_PREPROCESSORS
    config.HideHiddenTests.hidden_sources = _hidden_sources(course, job["assignment"])
    try:
        converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
        converter.log = _file_logger(log_path)
        converter.start()
    except Exception as error:
        events.append(["error", f"feedback failed: {error}"[:300]])


def _hidden_sources(course, assignment):
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        return {cell.name: cell.source for nb in gb.find_assignment(assignment).notebooks
                for cell in nb.source_cells if "BEGIN HIDDEN TESTS" in cell.source}


def _file_logger(path):
    logger = logging.getLogger(f"autograde.{path}")
    if not logger.handlers:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _status(events):
    kinds = {kind for kind, _ in events}
    return next((k for k in STATUS_ORDER if k in kinds), "graded")


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _warm_up():
    """Load once, before forking, what every job's feedback needs (nbconvert's HTML exporter,
    its templates' modules, pygments' Python lexer): about 0.5 s of CPU per submission."""
    import nbformat
    from nbconvert import HTMLExporter
    HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("*warm-up*"), nbformat.v4.new_code_cell("x = 1")]))


def serve():
    """Fork server: nbgrader is imported once here, and every job runs in a fresh forked child
    (its own session, so the parent can kill it and all it started). Protocol on stdin/stdout,
    one line each: `JOB_PATH` in; `started JOB_PATH PID` and `done JOB_PATH STATUS` out."""
    import signal
    running = {}

    def reap(*_):
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            print(f"done {running.pop(pid)} {status}", flush=True)

    signal.signal(signal.SIGCHLD, reap)
    _warm_up()  # speed hook: every forked job inherits it
    for line in sys.stdin:
        job_path = line.strip()
        if not job_path:
            continue
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            os.setsid()
            code = 0
            try:
                with open(Path(job_path).parent / "worker.log", "w") as log:
                    os.dup2(log.fileno(), 1)  # stdout is the protocol: keep it clean
                    os.dup2(log.fileno(), 2)
                    grade(json.loads(Path(job_path).read_text()))
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        running[pid] = job_path
        print(f"started {job_path} {pid}", flush=True)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    while running:  # stdin closed: wait for the last jobs
        signal.pause() if running else None


if __name__ == "__main__":
    ensure_venv_on_path()
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        grade(json.loads(Path(sys.argv[1]).read_text()))
