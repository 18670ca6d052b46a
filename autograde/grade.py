"""Grade one submission (one student, one assignment) in a private nbgrader course folder.

The batch runs `run_job(job)` in a worker process forked from a multiprocessing forkserver that
imported this module (and so nbgrader) once. The worker is trusted and runs as the grader's user;
only the kernel it starts runs student code, inside autograde.sandbox. It writes result.json in
the job's work folder (status, detail, per-test verdicts, where the autograded notebook and
feedback are) and its log, with every traceback, in grader.log beside it.
"""
import json
import logging
import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearOutput,
                                    DeduplicateIds, IgnorePattern, LimitOutput, OverwriteCells,
                                    OverwriteKernelspec)
from traitlets.config import Config

from .sandbox import SandboxSpec
from .execute import (DropEmptyNbgraderMetadata, GuardedExecute, VerdictSaveAutoGrades,
                      trusted_setup)
from .feedback import FEEDBACK_PREPROCESSORS
from .profile import InjectGradingParameters
from .settings import IOPUB_SECONDS, KERNEL_START_SECONDS
from .validate import check_structure, read_submission, restore_structure
from .zygote import die_with_parent
from . import exchange, feedback_page, outfolder

LOG_NAME = "grader.log"
# Most telling first: the row's status is the first kind that happened; detail lists them all.
STATUS_ORDER = ["error", "missing", "invalid_notebook", "timeout", "kernel_died", "memory_limit",
                "sys_exit", "tampered", "modified", "output_truncated", "graded"]


@dataclass(frozen=True)
class GradingLimits:
    cell_timeout: int          # seconds per cell
    submission_timeout: float  # seconds per notebook
    output_bytes: int          # output kept per cell
    worker_seconds: float      # the whole submission, after which the batch kills the worker


@dataclass(frozen=True)
class Job:
    """One student's submission of one assignment, as a worker grades it."""
    student: str
    assignment: str
    notebooks: tuple          # the assignment's notebook names
    submission: Path          # the grader's copy of the submission (OUT/submitted/...)
    out: Path
    work: Path                # this job's private folder (course/, grader.log, result.json)
    template_db: Path         # the gradebook with the assignment's records, copied per job
    scratch: Path             # the kernel's HOME and cwd
    limits: GradingLimits
    sandbox: SandboxSpec | None   # None: AUTOGRADE_SANDBOX=off
    kernel_env: dict          # without a sandbox: added to the kernel's environment
    protected_packages: tuple
    preload: tuple
    parameters: dict          # {name: Python source} injected after the parameters cell ({}: none)
    texts: dict               # the feedback page's texts: {language: {English: translation}}
    earlier_releases: dict = field(default_factory=dict)  # {notebook: [released_cells, ...]}


def run_job(job):
    """Worker process: grade, with stdout/stderr and every traceback in the job's grader.log."""
    # Only the batch stops a worker (workers.Workers): a terminal's Ctrl-C or hang-up goes to the
    # grader's process group, not to this one, so no grading is cut short into a wrong grade.
    os.setpgid(0, 0)
    # ... and a worker never outlives its parent, the forkserver (a hang-up kills that one).
    die_with_parent()
    with open(job.work / LOG_NAME, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        grade(job)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def grade(job):
    started = time.monotonic()
    work = job.work
    course = work / "course"
    student, assignment = job.student, job.assignment
    events = []
    submitted = course / "submitted" / student / assignment
    submitted.mkdir(parents=True)
    (course / "source").mkdir()
    (course / "source" / assignment).symlink_to(job.out / "source" / assignment)
    shutil.copy(job.template_db, course / "gradebook.db")
    release_dir = job.out / "release" / assignment
    valid = []
    for notebook in job.notebooks:
        nb, problem = read_submission(job.submission / f"{notebook}.ipynb")
        if problem:
            events.append(problem)
            continue
        events.extend(check_structure(nb, release_dir / f"{notebook}.ipynb", notebook,
                                      job.earlier_releases.get(notebook, ())))
        events.extend(exchange.others_named(nb, student, notebook))
        nb = restore_structure(nb, release_dir / f"{notebook}.ipynb")
        (submitted / f"{notebook}.ipynb").write_text(json.dumps(nb))
        valid.append(notebook)
    events.extend(exchange.carry(job.submission, submitted))  # timestamp.txt, submission_secret.txt

    verdicts, timing, graded = {}, {}, []
    if valid:
        log_path = work / LOG_NAME
        for notebook in valid:
            report = work / f"execute-{notebook}.json"
            config = _config(job, course, notebook, report, release_dir / f"{notebook}.ipynb")
            coursedir = CourseDirectory(config=config)
            converter = Autograde(coursedir=coursedir, config=config)
            converter.log = _file_logger(log_path)
            try:
                converter.start()
            except Exception as error:
                events.append(["error", f"nbgrader autograde failed on {notebook}: "
                               f"{_cause(error, log_path)}"[:300]])
                continue
            graded.append(notebook)
            if report.exists():
                execution = json.loads(report.read_text())
                events.extend(execution["events"])
                verdicts.update({f"{notebook}/{k}": v for k, v in execution["verdicts"].items()})
        graded_at = time.monotonic()
        if graded:
            _feedback(job, course, log_path, events)
            exchange.timestamp_for_release(job.submission, course / "feedback" / student / assignment)
        timing["autograde_s"] = round(graded_at - started, 2)
        timing["feedback_s"] = round(time.monotonic() - graded_at, 2)
    result = {"timing": timing, "events": events, "verdicts": verdicts, "course": str(course),
              "status": _status(events), "detail": "; ".join(_unique(d for _, d in events))}
    # written last and whole: its presence tells the batch that this job finished
    outfolder.replace_atomically(work / "result.json", lambda path: Path(path).write_text(json.dumps(result)))
    return result


def _config(job, course, notebook, report, release_path):
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.assignment_id = job.assignment
    config.CourseDirectory.student_id = job.student
    config.CourseDirectory.notebook_id = notebook
    config.Autograde.autograde_preprocessors = [
        InjectGradingParameters,  # the sizes it is told (--variants): smaller demonstrations
        GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
        VerdictSaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    config.Autograde.sanitize_preprocessors = [
        ClearOutput, DeduplicateIds, DropEmptyNbgraderMetadata, OverwriteKernelspec,
        OverwriteCells, CheckCellMetadata]
    config.OverwriteCells.add_missing_cells = True
    config.InjectGradingParameters.parameters = job.parameters
    execute = config.GuardedExecute
    execute.sandbox_spec = job.sandbox
    execute.kernel_env = job.kernel_env
    execute.scratch = str(job.scratch)
    execute.cell_timeout = job.limits.cell_timeout
    execute.submission_timeout = job.limits.submission_timeout
    execute.max_output_bytes = job.limits.output_bytes
    execute.protected_packages = list(job.protected_packages)
    execute.preload = list(job.preload)
    execute.report_path = str(report)
    execute.trusted_setup = trusted_setup(f"sqlite:///{course}/gradebook.db", job.assignment,
                                          notebook, release_path)
    execute.startup_timeout = KERNEL_START_SECONDS
    execute.iopub_timeout = IOPUB_SECONDS
    return config


def _feedback(job, course, log_path, events):
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.assignment_id = job.assignment
    config.CourseDirectory.student_id = job.student
    config.GenerateFeedback.preprocessors = FEEDBACK_PREPROCESSORS
    feedback_page.configure(config)
    config.HideHiddenTests.hidden_sources = _hidden_sources(course, job.assignment)
    config.HideHiddenTests.texts = job.texts
    redacted = job.work / "redacted.txt"
    config.HideHiddenTests.report_path = str(redacted)
    try:
        converter = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config)
        converter.log = _file_logger(log_path)
        converter.start()
    except Exception as error:
        events.append(["error", f"feedback failed: {_cause(error, log_path)}"[:300]])
    if redacted.exists():  # not a failure: the status stays, the detail says it
        cells = _unique(redacted.read_text().splitlines())
        events.append(["redacted", f"feedback: hidden-test text removed from {', '.join(cells[:8])}"])


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


def _cause(error, log_path):
    """One line for the row: the last line of the traceback nbgrader logged, else the exception.
    The exception's own traceback goes to the log too."""
    text = Path(log_path).read_text(errors="replace") if Path(log_path).exists() else ""
    cause = f"{type(error).__name__}: {error}"
    if "Traceback (most recent call last)" in text:
        lines = text.rsplit("Traceback (most recent call last)", 1)[1].splitlines()[1:]
        body = [line for line in lines if line.strip() and not line.startswith((" ", "["))]
        cause = body[0] if body else cause
    with open(log_path, "a") as log:
        log.write(traceback.format_exc())
    return " ".join(cause.split())


def _status(events):
    kinds = {kind for kind, _ in events}
    return next((k for k in STATUS_ORDER if k in kinds), "graded")


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
