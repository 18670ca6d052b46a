"""Grade a batch: prepare the course, collect, grade submissions in parallel (one worker process
and one sandboxed kernel each), merge results into the gradebook, write the table and feedback.

Workers are forked by the standard library's forkserver, which imports autograde.grade (and so
nbgrader) once: a fresh process per submission without seconds of imports each (workers.py,
with the slots where they grade and the signals that stop them). Each worker's
log, with every traceback, is kept as OUT/logs/<student>/<assignment>.log.

Nothing graded is lost: each submission is recorded as soon as it is graded, and a rerun grades
only what is not graded yet or has changed (autograde/resume.py). SIGINT, SIGTERM and SIGHUP stop
the batch: the running workers are killed (their kernels die with them) and what they were
grading is left for the next run; the class report is written for what is done. A closed stdout
or stderr stops nothing: the grading goes on without printing (report.say).
"""
import json
import os
import queue
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from . import class_report, gradebook, outfolder, report, resume, sandbox, shards
from .collect import collect, copy_submission, submitted_files
from .nbgrader_course import assignments_in, ensure_venv_on_path, prepare
from .grade import LOG_NAME, GradingLimits, Job
from .report import say
from .settings import GradingSettings, hidden, kernel_cache, kernel_env
from .workers import Stop, Workers, make_slot, restart_if_dead

@dataclass(frozen=True)
class Batch:
    """What every job of the batch shares."""
    settings: GradingSettings
    assignments: dict      # {assignment: [notebook names]}
    out: Path
    template: Path         # the gradebook with the assignments' records, copied for each job
    kernel_env: dict


def run(settings):
    """Grade the class. Returns the exit status: 0 when every submission is graded, 128 + the
    signal's number when a signal stopped the batch."""
    started = time.monotonic()
    with Stop() as stop:
        ensure_venv_on_path()
        work = Path(tempfile.mkdtemp(prefix="autograde-"))
        try:
            return _run(settings, work, stop, started)
        finally:
            if os.environ.get("AUTOGRADE_KEEP_WORK"):
                say(f"AUTOGRADE_KEEP_WORK: work folders kept in {work}", sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)


def _kernel_uids(settings):
    """The user id of each job's kernels (None: this user's, without the sandbox)."""
    if not settings.sandbox:
        say("WARNING: AUTOGRADE_SANDBOX=off: student code runs as you, with your files and "
            "network, without memory limits. Only for trusted submissions.", sys.stderr)
        return [None] * settings.jobs
    sandbox.check_available()
    return sandbox.kernel_uids(settings.jobs)


def _run(settings, work, stop, started):
    """run's batch, with the folder `work` for its jobs and kernels, until done or `stop`."""
    source = Path(settings.source).resolve()
    out = Path(settings.out).resolve()
    assignments = assignments_in(source)
    uids = _kernel_uids(settings)
    os.chmod(work, 0o711)
    jobs_dir, kernels_dir = work / "jobs", work / "kernels"
    jobs_dir.mkdir(mode=0o700)
    kernels_dir.mkdir(mode=0o711)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)  # before the sandboxes, which hide it
    submissions = collect(settings.submissions, assignments, jobs_dir, settings.named_regexp, settings.variants)
    # What the class submitted (every shard computes the same), or, for an empty class, all
    submitted = {s.assignment for s in submissions} or set(assignments)
    submissions = shards.select(submissions, settings.shard)  # --shard K/N: this run's share
    # The kernels' zygotes import while nbgrader prepares the course (one core each).
    cache = kernel_cache(settings.cache, work)
    hidden_paths = tuple(hidden(source, out, settings.submissions, jobs_dir))
    slots = [make_slot(settings, cache, hidden_paths, kernels_dir / f"slot{n}", uid)
             for n, uid in enumerate(uids if submissions else [])]
    try:
        prepare(source, out, [name for name in assignments if name in submitted], settings.variants)
        fingerprints = _fingerprints(submissions, assignments, out, settings)
        record = _resumed(out, fingerprints, settings)
        kept = len(record.graded)
        to_grade = [s for s in submissions if (s.student, s.assignment) not in record.graded]
        record.save()  # grades.csv holds what is kept, whatever happens next
        say(f"{kept} already graded, {len(to_grade)} to grade, with {settings.jobs} parallel jobs"
            + (" (--regrade grades all again)" if kept else "") + " ...", sys.stderr)
        if to_grade and not stop.signal:
            template = jobs_dir / "template.db"
            shutil.copy(out / "gradebook.db", template)
            batch = Batch(settings, assignments, out, template, kernel_env(settings, cache))
            _grade(batch, to_grade, record, fingerprints, slots, jobs_dir, stop)
    finally:
        for slot in slots:
            if slot.zygote:
                sandbox.stop_zygote(slot.zygote)
    rows = record.rows()
    report_path = class_report.write(out)
    outfolder.give_to_sudo_user(out)
    paths = (f"Table: {out / outfolder.GRADES}  Feedback: {out / 'feedback'}  Gradebook: "
             f"{out / 'gradebook.db'}  Logs: {out / 'logs'}\n"
             f"Class report: {report_path}  Gradebook import: {out / outfolder.WIDE}")
    left = len(record.missing())
    if stop.signal and left:
        say(f"Stopped by {stop.signal.name}: {len(rows)} of {len(submissions)} submissions "
            f"graded ({len(rows) - kept} in this run), {left} left. Run the same command again "
            f"to grade the {left} left: what is graded is kept.\n{paths}", sys.stderr)
        return 128 + stop.signal
    say(report.summary(rows, time.monotonic() - started, settings.jobs, kept))
    say(paths)
    return 0


def _grade(batch, submissions, record, fingerprints, slots, jobs_dir, stop):
    """Grade the submissions, recording each one as it is graded; on a signal, stop."""
    free = queue.Queue()
    for slot in slots:
        free.put(slot)
    workers = Workers()
    seconds = {}  # grading seconds per submission, for the class report

    def task(index, submission):
        slot = free.get()
        begun = time.monotonic()
        try:
            if workers.stopped:
                return None
            restart_if_dead(slot, batch.settings)
            return _grade_one(workers, _job(batch, submission, jobs_dir / f"job{index}", slot))
        finally:
            seconds[(submission.student, submission.assignment)] = time.monotonic() - begun
            free.put(slot)

    kept, total, done = len(record.graded), len(record.planned), 0
    grading_started = time.monotonic()
    class_report.warm_up()
    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        pending = {pool.submit(task, i, s): s for i, s in enumerate(submissions)}
        try:
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if stop.signal and not workers.stopped:
                    workers.stop()
                for future in finished:
                    submission = pending.pop(future)
                    outcome = _outcome(future, batch.out, submission)
                    # after a signal only a worker's own result counts (a crash may be the stop's)
                    if outcome is None or (stop.signal and not outcome[1]):
                        continue
                    key = (submission.student, submission.assignment)
                    row = _merge(batch.out, submission, outcome[0])
                    record.add(row, seconds[key], fingerprints[key])
                    done += 1
                    report.progress(done, total, row, time.monotonic() - grading_started, kept)
        finally:
            workers.stop()  # however the loop ends (a second Ctrl-C too), no worker outlives it


def _outcome(future, out, submission):
    """(result, True) for a worker's own result, (a row saying why there is none, False), or
    None when the batch stopped before the job ran."""
    try:
        return future.result()
    except Exception as error:  # the grader's own failure: still a row, still a batch
        log = _log_path(out, submission.student, submission.assignment)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        return {"status": "error", "course": None,
                "detail": f"grader error: {type(error).__name__}: {error} "
                          f"(traceback: {log.relative_to(out)})"[:300]}, False


def _fingerprints(submissions, assignments, out, settings):
    """{(student, assignment): the fingerprint of what grading it depends on}."""
    rules = settings.grading_rules()
    # an assignment's own earlier releases, not the others': a lesson released anew regrades only itself
    course = {name: resume.fingerprint(resume.folder_files(out, f"source/{name}", f"release/{name}"),
                                       {**rules, "earlier_releases": rules["earlier_releases"].get(name, {})})
              for name in assignments}
    return {(s.student, s.assignment): resume.fingerprint(
                submitted_files(s, assignments[s.assignment]), course[s.assignment])
            for s in submissions}


def _resumed(out, fingerprints, settings):
    """This run's record, holding what an earlier run graded of these same submissions, unchanged
    since and still in the gradebook, with its score read again (manual grades count)."""
    earlier = None if settings.regrade else resume.Record.read(out)
    kept = []
    if earlier:
        scores = _gradebook_scores(out)
        for key, entry in earlier.graded.items():
            if fingerprints.get(key) == entry["fingerprint"] and key in scores:
                score, max_score = scores[key]
                kept.append({**entry, "row": {**entry["row"], "score": report.fmt(score),
                                              "max_score": report.fmt(max_score)}})
    return resume.Record(out, fingerprints, settings.shard, kept)


def _gradebook_scores(out):
    """{(student, assignment): (score, max score)} of every submission in OUT's gradebook."""
    with gradebook.opened(out) as gb:
        return {(s.student.id, a.name): (s.score, s.max_score)
                for a in gb.assignments for s in gb.assignment_submissions(a.name)}


def _job(batch, submission, job_dir, slot):
    """The Job for one submission: the grader's copy of it, and its kernel's fresh scratch folder
    (supporting files the students had, never the notebooks)."""
    settings, out = batch.settings, batch.out
    copy = copy_submission(submission, batch.assignments[submission.assignment], out)
    job_dir.mkdir(mode=0o700)
    scratch = slot.scratch
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(mode=0o700)
    for item in (out / "release" / submission.assignment).iterdir():
        if item.suffix != ".ipynb" and item.is_file():
            shutil.copy(item, scratch / item.name)
    if slot.spec:
        sandbox.give_to_kernel(slot.spec, scratch, *scratch.rglob("*"))
    return Job(student=submission.student, assignment=submission.assignment,
               notebooks=tuple(batch.assignments[submission.assignment]), submission=copy, out=out,
               work=job_dir, template_db=batch.template, scratch=scratch, sandbox=slot.spec,
               kernel_env=batch.kernel_env, protected_packages=tuple(settings.protected),
               preload=tuple(settings.preload), parameters=_parameters(settings, submission),
               texts=settings.variants.texts(),
               earlier_releases=settings.earlier_releases.get(submission.assignment, {}),
               limits=GradingLimits(cell_timeout=settings.cell_timeout,
                                    submission_timeout=settings.timeout,
                                    output_bytes=settings.max_output_bytes,
                                    worker_seconds=settings.worker_seconds(
                                        len(batch.assignments[submission.assignment]))))


def _parameters(settings, submission):
    """{name: Python source} injected after the parameters cell: the sizes the variants table gives
    the assignment, and the language the grader chose where the notebook's is not one of the
    course's (collect.py)."""
    told = settings.variants.parameters(submission.assignment)
    if submission.language is None:
        return told
    return {**told, "course_language": repr(submission.language)}


def _grade_one(workers, job):
    """Run the job in a forked worker: (its result, True), (a row saying why there is none,
    False), or None when the batch stopped it."""
    budget = job.limits.worker_seconds
    try:
        ended = workers.run(job, budget)
    finally:
        shutil.rmtree(job.scratch, ignore_errors=True)
    result_path = job.work / "result.json"
    if not result_path.exists() and workers.stopped:
        return None
    log = _log_path(job.out, job.student, job.assignment)
    log.parent.mkdir(parents=True, exist_ok=True)
    if (job.work / LOG_NAME).exists():
        shutil.copyfile(job.work / LOG_NAME, log)
    if result_path.exists():
        return json.loads(result_path.read_text()), True
    if not ended:
        return {"status": "timeout", "detail": f"grading took over {budget:.0f} s",
                "course": None}, False
    last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    return {"status": "error", "course": None,
            "detail": f"grader crashed: {last[0] if last else 'no log'} "
                      f"(traceback: {log.relative_to(job.out)})"[:300]}, False


def _log_path(out, student, assignment):
    return out / "logs" / student / f"{assignment}.log"


def _merge(out, submission, result):
    """Copy the worker's autograde scores into OUT's gradebook (only this process writes it)."""
    student, assignment = submission.student, submission.assignment
    worker = Path(result["course"]) if result.get("course") else None
    graded = worker is not None and (worker / "gradebook.db").exists()
    with gradebook.opened(out) as gb, (gradebook.opened(worker) if graded else nullcontext()) as src:
        copy = gradebook.copy_submission(src, gb, assignment, student, manual=False,
                                         not_graded=result["detail"])
        score, max_score = copy.score, copy.max_score
    for kind in ("autograded", "feedback"):
        target = out / kind / student / assignment
        if target.exists():
            shutil.rmtree(target)
        if worker and (worker / kind / student / assignment).exists():
            shutil.copytree(worker / kind / student / assignment, target)
    detail = result["detail"]
    if result["status"] == "error" and "traceback:" not in detail:
        detail += f" (traceback: {_log_path(out, student, assignment).relative_to(out)})"
    detail = "; ".join(part for part in (submission.note, detail) if part)
    return {"student_id": student, "assignment": assignment, "score": report.fmt(score),
            "max_score": report.fmt(max_score), "status": result["status"], "detail": detail}
