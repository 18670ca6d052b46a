"""The Slurm recipes of slurm/ run on a real single-node Slurm (slurm_cluster.py), as the docs use them.

A toy class of 6 students (autograde_toy.py), graded in its sandbox:
- on one machine (`make autograde`), and as slurm/grade.sh's job array of 3 shards with
  slurm/merge.sh after it: the merged grades.csv and grades_wide.csv equal one machine's;
- shard 2 hits its time limit (1 minute) while student4's kernel sleeps (until a moment after
  the limit, so that later runs grade it quickly): the grader stops as docs/grading.md says
  (`Stopped by SIGTERM`, the report written, no temporary folder left), the merge waiting for
  the array is cancelled instead of pending forever, and `sbatch --array=2 slurm/grade.sh`
  grades only what shard 2 has left; then a new merge completes the class;
- slurm/train.sh on two Slurm tasks of one node, with the Trainer and without --cpu, trains the
  same parameters as one process with the whole batch.
The jobs run side by side (about 2 minutes). Skips unless COURSE_REQUIRE_SLURM=1 (.ci/run, as root).
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import torch

import slurm_cluster
from autograde_toy import PERFECT, TOY_OPTIONS, answer, released_toy, write_class, write_source
from course.paths import ROOT
from train_script_runs import COMMON, free_port, train

slurm_cluster.skip_unless_asked()
pytestmark = pytest.mark.slow
SCRIPTS = ROOT / "slurm"
SLOW_STUDENT = "student4"  # the second of shard 2 (shards take every 3rd of the sorted students)
# s after the submission: past shard 2's time limit (1 minute), which Slurm checks every 30 s
SLEEP_UNTIL = 100
SMALL_JOB = ["--cpus-per-task=1", "--mem=2G", "--time=10"]


@pytest.fixture(scope="module")
def cluster():
    slurm_cluster.require_slurm()
    yield from slurm_cluster.start()


def text(path):
    """A job's log, or "" where the job never ran."""
    return path.read_text() if path.exists() else ""


def read(path):
    with open(path, newline="") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def runs(cluster):
    root = Path(tempfile.mkdtemp(prefix="slurm-class-"))
    source = write_source(root / "source")
    release = released_toy(source, root / "seed")
    write_class(root / "class", release, [None, "add", "mean", None, None, "add"])
    sleep = f"import time\ntime.sleep(max(0, {time.time() + SLEEP_UNTIL} - time.time()))\n"
    nbformat.write(answer(release, {**PERFECT, "square": sleep + PERFECT["square"]}),
                   root / "class" / SLOW_STUDENT / "toy" / "toy.ipynb")
    options = " ".join([*TOY_OPTIONS, "--cell-timeout", "150", "--timeout", "300", "--source", str(source)])
    for name in ("tmp", "tmp-one"):
        (root / name).mkdir()
    # what a job takes from the environment of sbatch (--export=ALL, Slurm's default)
    env = {"SUBMISSIONS": str(root / "class"), "SHARDS_DIR": str(root / "shards"), "GRADED": str(root / "graded"),
           "SHARD_COUNT": "3", "GRADE_OPTIONS": options, "TMPDIR": str(root / "tmp")}

    def grade(array):
        return cluster.sbatch(f"--array={array}", *SMALL_JOB, f"--output={root}/grade-%A_%a.log",
                              SCRIPTS / "grade.sh", env=env, cwd=ROOT)

    def merge(after):
        return cluster.sbatch(f"--dependency=afterok:{after}", *SMALL_JOB, f"--output={root}/merge-%j.log",
                              SCRIPTS / "merge.sh", env=env, cwd=ROOT)

    result = {"root": root}
    array = grade("1-3")
    cluster.run("scontrol", "update", f"JobId={array}_2", "TimeLimit=1")
    first_merge = merge(array)
    trainer = [a for a in COMMON if a != "--cpu"] + ["--path", "trainer"]
    training = cluster.sbatch("--nodes=1", "--ntasks=2", "--ntasks-per-node=2", *SMALL_JOB,
                              f"--output={root}/train.log", SCRIPTS / "train.sh", *trainer, "--batch-size", "8",
                              "--save-parameters", str(root / "two.pt"), "--output-dir", str(root / "two"),
                              env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": free_port(), "GLOO_SOCKET_IFNAME": "lo"},
                              cwd=ROOT)
    one_machine = subprocess.Popen(
        ["make", "-s", "autograde", f"SUBMISSIONS={root / 'class'}", f"OUT={root / 'one'}", "JOBS=2",
         f"GRADE_OPTIONS={options}"], cwd=ROOT, env={**os.environ, "TMPDIR": str(root / "tmp-one")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # one process with the whole batch (beside the jobs), as tests/test_train_script.py compares
    result["one_out"], result["one"] = train([sys.executable], ["--path", "trainer", "--batch-size", "16",
                                                                "--output-dir", str(root / "one-trainer")],
                                             root / "one.pt")
    result["training"] = cluster.wait(training, 300)
    result["train_log"] = text(root / "train.log")
    result["two"] = torch.load(root / "two.pt") if (root / "two.pt").exists() else None

    result["array"] = cluster.wait(array, 240)
    timed_out = time.monotonic()
    result["first_merge"] = cluster.wait(first_merge, 30, until={"CANCELLED", "COMPLETED", "FAILED"})
    result["merge_seconds"] = time.monotonic() - timed_out
    result["stopped_log"] = text(root / f"grade-{array}_2.log")
    result["stopped_files"] = sorted(p.name for p in (root / "shards" / "2").glob("*"))
    result["tmp_left"] = sorted(p.name for p in (root / "tmp").iterdir())

    again = grade("2")
    last_merge = merge(again)
    result["again"] = cluster.wait(again, 240)
    result["again_log"] = text(root / f"grade-{again}_2.log")
    result["last_merge"] = cluster.wait(last_merge, 120)
    result["merge_log"] = text(root / f"merge-{last_merge}.log")
    result["one_machine_log"] = one_machine.communicate(timeout=300)[0]
    assert one_machine.returncode == 0, result["one_machine_log"][-3000:]
    yield result
    shutil.rmtree(root, ignore_errors=True)


def states(jobs):
    return {job.get("ArrayTaskId", job["JobId"]): job["JobState"] for job in jobs}


def test_job_array_and_merge_give_one_machines_grades(runs):
    root = runs["root"]
    assert states(runs["last_merge"]) == {runs["last_merge"][0]["JobId"]: "COMPLETED"}, runs["merge_log"]
    assert "Merged 3 shards: 6 submissions" in runs["merge_log"]
    one, merged = root / "one", root / "graded"
    assert (merged / "grades.csv").read_text() == (one / "grades.csv").read_text()
    assert (merged / "grades_wide.csv").read_text() == (one / "grades_wide.csv").read_text()
    scores = {student: row["score"] for (student, _), row in read(merged / "grades.csv").items()}
    assert scores == {"student0": "6", "student1": "4", "student2": "3", "student3": "6", "student4": "6",
                      "student5": "4"}


def test_a_shard_at_its_time_limit_stops_as_the_docs_say(runs):
    assert states(runs["array"]) == {"1": "COMPLETED", "2": "TIMEOUT", "3": "COMPLETED"}
    log = runs["stopped_log"]
    assert "DUE TO TIME LIMIT" in log
    assert "Stopped by SIGTERM: 1 of 2 submissions graded (1 in this run), 1 left" in log, log[-3000:]
    assert {"report.html", "report.md", "grades_wide.csv"} <= set(runs["stopped_files"])
    assert runs["tmp_left"] == [], "the grader's temporary folders are left behind"


def test_the_merge_after_a_timed_out_shard_is_cancelled_not_pending(runs):
    [merge] = runs["first_merge"]
    assert merge["JobState"] == "CANCELLED", f"{merge['JobState']} ({merge['Reason']})"


def test_a_resubmitted_shard_grades_only_what_it_has_left(runs):
    assert states(runs["again"]) == {"2": "COMPLETED"}, runs["again_log"][-3000:]
    assert "1 already graded, 1 to grade" in runs["again_log"], runs["again_log"][-3000:]
    shard = read(runs["root"] / "shards" / "2" / "grades.csv")
    assert sorted(student for student, _ in shard) == ["student1", SLOW_STUDENT]


def test_two_slurm_tasks_train_like_one_process_with_the_whole_batch(runs):
    log = runs["train_log"]
    assert states(runs["training"]) == {runs["training"][0]["JobId"]: "COMPLETED"}, log[-3000:]
    assert "6 optimizer steps" in runs["one_out"] and "6 optimizer steps" in log, log[-3000:]
    assert log.count("validation:") == 1, "only the process with rank 0 reports"
    one, two = runs["one"], runs["two"]
    difference = max((one[name] - two[name]).abs().max().item() for name in one)
    assert difference < 5e-4, f"2 tasks differ from 1 process by {difference:.2e}"
