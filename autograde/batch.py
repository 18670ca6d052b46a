"""Grade a batch: prepare the course, collect, grade submissions in parallel (one worker process
and one sandboxed kernel each), merge results into the gradebook, write the table and feedback.

Workers are forked by the standard library's forkserver, which imports autograde.grade (and so
nbgrader) once: a fresh process per submission without seconds of imports each. Each worker's
log, with every traceback, is kept as OUT/logs/<student>/<assignment>.log.
"""
import json
import multiprocessing
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from . import class_report, report, sandbox, shards
from .collect import collect
from .course import assignments_in, ensure_venv_on_path, prepare
from .grade import LOG_NAME, GradingLimits, Job, run_job

REPO = Path(__file__).resolve().parent.parent


def run(options):
    started = time.monotonic()
    ensure_venv_on_path()
    source = Path(options.source).resolve()
    out = Path(options.out).resolve()
    assignments = assignments_in(source)
    uids = [None] * options.jobs
    if options.sandbox:
        sandbox.check_available()
        uids = sandbox.kernel_uids(options.jobs)
    else:
        print("WARNING: AUTOGRADE_SANDBOX=off: student code runs as you, with your files and "
              "network, without memory limits. Only for trusted submissions.", file=sys.stderr)
    prepare(source, out, assignments)
    work = Path(tempfile.mkdtemp(prefix="autograde-"))
    try:
        return _run(options, source, out, assignments, work, uids, started)
    finally:
        if os.environ.get("AUTOGRADE_KEEP_WORK"):
            print(f"AUTOGRADE_KEEP_WORK: work folders kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(options, source, out, assignments, work, uids, started):
    os.chmod(work, 0o711)
    jobs_dir, kernels_dir = work / "jobs", work / "kernels"
    jobs_dir.mkdir(mode=0o700)
    kernels_dir.mkdir(mode=0o711)
    submissions = collect(options.submissions, assignments, jobs_dir, options.named_regexp)
    submissions = shards.select(submissions, options.shard)  # --shard K/N: this run's share
    template = jobs_dir / "template.db"
    shutil.copy(out / "gradebook.db", template)
    env = _kernel_env(source, kernels_dir, options)
    hide = _hidden_paths(source, out, options.submissions, jobs_dir)
    workers = multiprocessing.get_context("forkserver")
    workers.set_forkserver_preload(["autograde.warm"])
    slots = queue.Queue()
    for slot in range(options.jobs):
        slots.put(slot)

    seconds = {}  # grading seconds per submission, for the class report

    def task(index, submission):
        copy = _copy_submission(submission, assignments[submission.assignment], out)
        slot = slots.get()
        begun = time.monotonic()
        try:
            job = _job(options, submission, assignments, copy, out, template,
                       jobs_dir / f"job{index}", kernels_dir / f"kernel{slot}", uids[slot], env, hide)
            return _grade_one(workers, job, out)
        finally:
            seconds[(submission.student, submission.assignment)] = time.monotonic() - begun
            slots.put(slot)

    rows = []
    print(f"Grading {len(submissions)} submissions with {options.jobs} parallel jobs ...",
          file=sys.stderr)
    grading_started = time.monotonic()
    class_report.warm_up()
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {pool.submit(task, i, s): s for i, s in enumerate(submissions)}
        for future in as_completed(futures):
            submission = futures[future]
            try:
                result = future.result()
            except Exception as error:  # the grader's own failure: still a row, still a batch
                log = _log_path(out, submission.student, submission.assignment)
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(traceback.format_exc())
                result = {"status": "error", "course": None,
                          "detail": f"grader error: {type(error).__name__}: {error} "
                                    f"(traceback: {log.relative_to(out)})"[:300]}
            rows.append(_merge(out, submission, result, assignments))
            report.progress(len(rows), len(submissions), rows[-1], time.monotonic() - grading_started)
    report.write_csv(out / "grades.csv", rows)
    class_report.write_timings(out / "timings.csv", seconds)
    report_path = class_report.write(out)
    _give_to_sudo_user(out)
    print(report.summary(rows, time.monotonic() - started, options.jobs))
    print(f"Table: {out / 'grades.csv'}  Feedback: {out / 'feedback'}  Gradebook: "
          f"{out / 'gradebook.db'}  Logs: {out / 'logs'}")
    print(f"Class report: {report_path}  Gradebook import: {out / 'grades_wide.csv'}")
    return rows


def _job(options, submission, assignments, copy, out, template, job_dir, scratch, uid, env,
         hide):
    """The Job for one submission, with its kernel's fresh scratch folder (supporting files
    the students had, never the notebooks)."""
    job_dir.mkdir(mode=0o700)
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(mode=0o700)
    for item in (out / "release" / submission.assignment).iterdir():
        if item.suffix != ".ipynb" and item.is_file():
            shutil.copy(item, scratch / item.name)
    spec = None
    if options.sandbox:
        spec = sandbox.SandboxSpec(
            scratch=str(scratch), env=env, read_only=tuple(_exposed(env)), hide=tuple(hide),
            uid=uid,
            limits=sandbox.KernelLimits(memory_bytes=options.memory_mb * 1024 ** 2,
                                        cpu_seconds=int(options.timeout * 4 + 60)))
        sandbox.give_to_kernel(spec, scratch, *scratch.rglob("*"))
    return Job(student=submission.student, assignment=submission.assignment,
               notebooks=tuple(assignments[submission.assignment]), submission=copy, out=out,
               work=job_dir, template_db=template, scratch=scratch, sandbox=spec,
               kernel_env=env, protected_packages=tuple(options.protected),
               preload=tuple(options.preload), parameters=options.parameters,
               limits=GradingLimits(cell_timeout=options.cell_timeout,
                                    submission_timeout=options.timeout,
                                    output_bytes=options.max_output_bytes))


def _grade_one(workers, job, out):
    """Run the job in a forked worker; its result, or a row saying why there is none."""
    budget = job.limits.submission_timeout * len(job.notebooks) + 180
    worker = workers.Process(target=run_job, args=(job,), name=f"grade {job.student}")
    try:
        worker.start()
        worker.join(budget)
        killed = worker.is_alive()
        if killed:  # its kernel (bwrap) dies with it
            worker.kill()
            worker.join()
    finally:
        shutil.rmtree(job.scratch, ignore_errors=True)
    log = _log_path(out, job.student, job.assignment)
    log.parent.mkdir(parents=True, exist_ok=True)
    if (job.work / LOG_NAME).exists():
        shutil.copyfile(job.work / LOG_NAME, log)
    result_path = job.work / "result.json"
    if result_path.exists():
        return json.loads(result_path.read_text())
    if killed:
        return {"status": "timeout", "detail": f"grading took over {budget:.0f} s", "course": None}
    last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    return {"status": "error", "course": None,
            "detail": f"grader crashed: {last[0] if last else 'no log'} "
                      f"(traceback: {log.relative_to(out)})"[:300]}


def _log_path(out, student, assignment):
    return out / "logs" / student / f"{assignment}.log"


def _give_to_sudo_user(out):
    """Under `sudo make autograde`, hand OUT back to the instructor (formgrader runs as them)."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() == 0 and uid and gid:
        for path in [out, *out.rglob("*")]:
            os.lchown(path, int(uid), int(gid))


def _copy_submission(submission, notebooks, out):
    """The grader only ever reads this copy (OUT/submitted/...), never the original."""
    target = out / "submitted" / submission.student / submission.assignment
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in [f"{nb}.ipynb" for nb in notebooks] + ["timestamp.txt"]:
        path = submission.folder / name
        if path.is_symlink() or not path.exists():
            continue
        if path.is_file():
            shutil.copyfile(path, target / name)
        else:
            (target / name).mkdir()  # keep "not a file" visible to the validator
    return target


def _merge(out, submission, result, assignments):
    """Copy the worker's autograde scores into OUT's gradebook (only this process writes it)."""
    warnings.filterwarnings("ignore", module="nbgrader.api")  # SQLAlchemy autoflush chatter
    student, assignment = submission.student, submission.assignment
    worker = Path(result["course"]) if result.get("course") else None
    with Gradebook(f"sqlite:///{out}/gradebook.db") as gb:
        gb.update_or_create_student(student)
        src = None
        if worker and (worker / "gradebook.db").exists():
            src = Gradebook(f"sqlite:///{worker}/gradebook.db")
        try:
            found = src.find_submission(assignment, student) if src else None
        except MissingEntry:
            found = None
        dst = gb.update_or_create_submission(assignment, student,
                                             timestamp=found.timestamp if found else None)
        for notebook in dst.notebooks:
            for grade in notebook.grades:
                auto, manual = _worker_grade(src, found, grade.name, notebook.name, assignment, student)
                grade.auto_score = auto
                grade.needs_manual_grade = manual or grade.manual_score is not None
            for comment in notebook.comments:
                comment.auto_comment = None if found else "Not graded: " + result["detail"][:200]
        gb.db.commit()
        score, max_score = dst.score, dst.max_score
        if src:
            src.close()
    for kind in ("autograded", "feedback"):
        target = out / kind / student / assignment
        if target.exists():
            shutil.rmtree(target)
        if worker and (worker / kind / student / assignment).exists():
            shutil.copytree(worker / kind / student / assignment, target)
    detail = result["detail"]
    if result["status"] == "error" and "traceback:" not in detail:
        detail += f" (traceback: {_log_path(out, student, assignment).relative_to(out)})"
    return {"student_id": student, "assignment": assignment, "score": report.fmt(score),
            "max_score": report.fmt(max_score), "status": result["status"], "detail": detail}


def _worker_grade(src, found, grade_id, notebook, assignment, student):
    if found is None:
        return 0.0, False
    try:
        grade = src.find_grade(grade_id, notebook, assignment, student)
    except MissingEntry:
        return 0.0, False
    if grade.auto_score is None and not grade.needs_manual_grade:
        return 0.0, False
    return grade.auto_score, grade.needs_manual_grade


def _kernel_env(source, kernels_dir, options):
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0", "MPLBACKEND": "agg",
           "PYTHONPATH": str(REPO)}
    cache = _course_cache(source, kernels_dir.parent)
    if cache:
        env["COURSE_CACHE"] = str(cache)
    return env


def _course_cache(source, work):
    """Build the helpers' model/tokenizer cache as the grader, give kernels a read-only copy."""
    if not any("helpers" in p.read_text(errors="ignore") for p in source.rglob("*.ipynb")):
        return None
    build = subprocess.run([sys.executable, "-c", "import helpers; helpers.load_tokenizer(); "
                            "helpers.load_model(); print(helpers.modeling.cache_dir().parent)"],
                           capture_output=True, text=True, cwd=REPO)
    if build.returncode != 0:
        raise RuntimeError(f"building the course cache failed:\n{build.stderr[-2000:]}")
    cache = work / "cache"
    shutil.copytree(build.stdout.strip().splitlines()[-1], cache)
    for path in [cache, *cache.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return cache


def _exposed(env):
    """What a kernel may read: Python, the course's packages, the model cache."""
    paths = [sys.base_prefix, sys.prefix, str(REPO / "helpers"), str(REPO / "autograde")]
    return paths + ([env["COURSE_CACHE"]] if "COURSE_CACHE" in env else [])


def _hidden_paths(source, out, submissions, jobs_dir):
    paths = [source, out, Path(submissions).resolve(), jobs_dir]
    for parent in [source, *source.parents]:
        if (parent / ".git").exists():
            paths.append(parent / ".git")
            break
    return [str(p) for p in paths]
