"""Grade a batch: prepare the course, collect, grade submissions in parallel (one worker process
and one sandboxed kernel each), merge results into the gradebook, write the table and feedback."""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from . import class_report, report, sandbox, shards
from .collect import collect
from .course import assignments_in, ensure_venv_on_path, prepare

REPO = Path(__file__).resolve().parent.parent


def run(options):
    started = time.monotonic()
    ensure_venv_on_path()
    source = Path(options.source).resolve()
    out = Path(options.out).resolve()
    assignments = assignments_in(source)
    if options.sandbox:
        sandbox.check_available()
        uids = sandbox.acquire_uids(options.jobs)
        for uid in uids:  # leftovers of an interrupted earlier batch
            sandbox.kill_all(uid)
    else:
        uids = [None] * options.jobs
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
    submissions = shards.select(submissions, options.shard)  # shards hook: --shard K/N
    template = jobs_dir / "template.db"
    shutil.copy(out / "gradebook.db", template)
    env = _kernel_env(source, kernels_dir, options)
    hide = _hidden_paths(source, out, options.submissions, jobs_dir)
    slots = queue.Queue()
    for slot in range(options.jobs):
        slots.put(slot)

    seconds = {}  # class report hook: grading seconds per submission

    def task(index, submission):
        copy = _copy_submission(submission, assignments[submission.assignment], out)
        slot = slots.get()
        begun = time.monotonic()
        try:
            return _grade_one(options, index, submission, copy, assignments, out, template,
                              jobs_dir, kernels_dir, slot, uids[slot], env, hide, server)
        finally:
            seconds[(submission.student, submission.assignment)] = time.monotonic() - begun
            slots.put(slot)

    server = ForkServer(work / "forkserver.log", None if uids[0] is not None else env)
    rows = []
    print(f"Grading {len(submissions)} submissions with {options.jobs} parallel jobs ...",
          file=sys.stderr)
    grading_started = time.monotonic()
    class_report.warm_up()  # class report hook
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {pool.submit(task, i, s): s for i, s in enumerate(submissions)}
        for future in as_completed(futures):
            submission = futures[future]
            try:
                result = future.result()
            except Exception as error:  # the grader's own failure: still a row, still a batch
                result = {"status": "error", "detail": f"grader error: {error}"[:300],
                          "course": None}
            rows.append(_merge(out, submission, result, assignments))
            report.progress(len(rows), len(submissions), rows[-1],
                            time.monotonic() - grading_started)
    server.close()
    report.write_csv(out / "grades.csv", rows)
    class_report.write_timings(out / "timings.csv", seconds)  # class report hook (3 lines)
    report_path = class_report.write(out)
    _give_to_sudo_user(out)
    print(report.summary(rows, time.monotonic() - started, options.jobs))
    print(f"Table: {out / 'grades.csv'}  Feedback: {out / 'feedback'}  Gradebook: "
          f"{out / 'gradebook.db'}")
    print(f"Class report: {report_path}  Gradebook import: {out / 'grades_wide.csv'}")
    return rows


class ForkServer:
    """One `python -m autograde.grade --serve` process that has imported nbgrader once and forks
    a fresh child per submission (saves seconds of imports per submission)."""

    def __init__(self, log_path, extra_env):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autograde.grade", "--serve"], cwd=REPO, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log_path, "w"),
            env={**os.environ, **(extra_env or {})})
        self.lock = threading.Lock()
        self.pids, self.done = {}, {}
        self.events = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            kind, job, value = line.split()
            event = self.events[job]
            if kind == "started":
                self.pids[job] = int(value)
            else:
                self.done[job] = int(value)
                event.set()

    def run(self, job_path, timeout):
        """Grade one job; False when it ran past `timeout` and was killed."""
        job = str(job_path)
        self.events[job] = threading.Event()
        with self.lock:
            self.process.stdin.write(job + "\n")
            self.process.stdin.flush()
        if self.events[job].wait(timeout):
            return True
        pid = self.pids.get(job)
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.events[job].wait(30)
        return False

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


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


def _grade_one(options, index, submission, copy, assignments, out, template, jobs_dir,
               kernels_dir, slot, uid, env, hide, server):
    job_dir = jobs_dir / f"job{index}"
    job_dir.mkdir(mode=0o700)
    scratch = kernels_dir / f"kernel{slot}"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(mode=0o700)
    release = out / "release" / submission.assignment
    for item in release.iterdir():  # supporting files the students had, never the notebooks
        if item.suffix != ".ipynb" and item.is_file():
            shutil.copy(item, scratch / item.name)
    if uid is not None:
        for path in [scratch, *scratch.rglob("*")]:
            os.chown(path, uid, uid)
    limits = {"cell_timeout": options.cell_timeout, "submission_timeout": options.timeout,
              "output_bytes": options.max_output_bytes}
    spec = None if uid is None else {
        "uid": uid, "scratch": str(scratch), "hide": hide, "env": env,
        "newroot": str(kernels_dir / f"root{slot}"), "read_only": _exposed(env),
        "limits": {"memory_bytes": options.memory_mb * 1024 ** 2,
                   "cpu_seconds": int(options.timeout * 4 + 60),
                   "file_bytes": 256 * 1024 ** 2, "processes": 1024}}
    job = {"student": submission.student, "assignment": submission.assignment,
           "notebooks": assignments[submission.assignment], "submission": str(copy),
           "out": str(out), "work": str(job_dir), "template_db": str(template),
           "scratch": str(scratch), "sandbox_spec": spec, "limits": limits,
           "protected_packages": options.protected, "preload": options.preload,
           "parameters": options.parameters}  # grading profile hook
    (job_dir / "job.json").write_text(json.dumps(job))
    budget = options.timeout * len(job["notebooks"]) + 180
    killed = False
    try:
        killed = not server.run(job_dir / "job.json", budget)
    finally:
        if uid is not None:
            sandbox.kill_all(uid)
        shutil.rmtree(scratch, ignore_errors=True)
    result_path = job_dir / "result.json"
    if result_path.exists():
        return json.loads(result_path.read_text())
    if killed:
        return {"status": "timeout", "detail": f"grading took over {budget:.0f} s", "course": None}
    tail = (job_dir / "worker.log").read_text()[-300:]
    return {"status": "error", "detail": f"grader crashed: {tail}", "course": None}


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
    return {"student_id": student, "assignment": assignment, "score": report.fmt(score),
            "max_score": report.fmt(max_score), "status": result["status"],
            "detail": result["detail"]}


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
