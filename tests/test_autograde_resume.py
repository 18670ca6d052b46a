"""An interrupted grading run loses nothing, and a rerun grades only what is left or changed.

A toy class of three submissions (6, 4 and 3 points), graded one at a time so that a signal
surely finds some left. Kernels run without the sandbox (--no-sandbox) so that the tests run as
any user: the sandbox is tested in test_autograde.py, and resuming does not depend on it.
"""
import csv
import io
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

import background
from autograde_toy import (PERFECT, REPO, answer, autograde, grader, processes_naming, released_toy, write_class,
                           write_source)

pytestmark = pytest.mark.slow  # each test grades a class

SCORES = {"student0": "6", "student1": "4", "student2": "3"}


def scores(table):
    """{student: score} of a grades.csv's text."""
    return {row["student_id"]: row["score"] for row in csv.DictReader(io.StringIO(table))}


def graded_now(run_stderr):
    """The students whose progress line a run printed: those it graded."""
    return [line.split()[-3].split("/")[0] for line in run_stderr.splitlines()
            if line.startswith("[")]


@pytest.fixture(scope="module")
def toy_class():
    root = Path(tempfile.mkdtemp(prefix="resume-test-"))
    source = write_source(root / "source")
    release = released_toy(source, root / "seed")
    write_class(root / "submissions", release, [None, "add", "mean"])
    yield root, source, release
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def reader_gone(toy_class):
    """A whole run whose output (stdout and stderr) goes to a reader that stops reading once the
    grading starts, as `make autograde | tee log` when tee is gone."""
    root, source, _ = toy_class
    run = subprocess.Popen(grader(root / "submissions", root / "whole", source, "--no-sandbox",
                                  jobs=2),
                           cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in run.stdout:
        if "to grade" in line:
            break
    run.stdout.close()  # every later line of the grader meets a closed pipe
    run.wait(timeout=600)
    return run.returncode, root / "whole"


@pytest.fixture(scope="module")
def interrupted(toy_class):
    """SIGTERM once the first submission is graded, then the same command again."""
    root, source, _ = toy_class
    out, tmp = root / "out", root / "tmp"  # the grader's work folder, and its kernels', in tmp
    tmp.mkdir()
    command = grader(root / "submissions", out, source, "--no-sandbox", jobs=1)
    with background.orphans_to_init():  # where the instructor's grader leaves its kernels
        run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "TMPDIR": str(tmp)})
        before = []
        for line in run.stderr:
            before.append(line)
            if line.startswith("["):
                break
        run.send_signal(signal.SIGTERM)
        stdout, stderr = run.communicate(timeout=300)
        # without a sandbox a kernel ends within a second of its worker on a quiet machine, later on a
        # busy one (seen: over 5 s at a load of 7); an orphan would live on
        deadline = time.monotonic() + 30
        while processes_naming(str(tmp)) and time.monotonic() < deadline:
            time.sleep(0.2)
        stopped = {"returncode": run.returncode, "stderr": "".join(before) + stderr,
                   "table": (out / "grades.csv").read_text(), "kernels": processes_naming(str(tmp)),
                   "report": (out / "report.html").exists()}
    rerun = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    return stopped, rerun, (out / "grades.csv").read_text(), out


def test_a_closed_output_stops_nothing(reader_gone):
    returncode, out = reader_gone
    assert returncode == 0
    assert scores((out / "grades.csv").read_text()) == SCORES
    assert (out / "report.html").exists() and (out / "grades_wide.csv").exists()


def test_sigterm_stops_at_once_and_keeps_what_is_graded(interrupted, reader_gone):
    stopped, _, _, _ = interrupted
    assert stopped["returncode"] == 128 + signal.SIGTERM, stopped["stderr"][-3000:]
    done = graded_now(stopped["stderr"])
    assert 1 <= len(done) < 3
    left = 3 - len(done)
    assert (f"Stopped by SIGTERM: {len(done)} of 3 submissions graded ({len(done)} in this run), "
            f"{left} left. Run the same command again") in stopped["stderr"]
    whole = (reader_gone[1] / "grades.csv").read_text().splitlines()
    assert stopped["table"].splitlines() == [whole[0]] + [
        row for row in whole[1:] if row.split(",")[0] in done]  # the rows of those graded
    assert stopped["report"]
    assert not stopped["kernels"], "a kernel outlived the stopped grader"


def test_the_rerun_grades_each_submission_once_in_all(interrupted, reader_gone):
    stopped, rerun, table, _ = interrupted
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    first, second = graded_now(stopped["stderr"]), graded_now(rerun.stderr)
    assert sorted(first + second) == sorted(SCORES)
    assert f"{len(first)} already graded, {len(second)} to grade" in rerun.stderr
    progress = [line for line in rerun.stderr.splitlines() if line.startswith("[")]
    assert all(f"/3 ({len(first)} already graded) " in line for line in progress)
    assert f"kept {len(first)} already graded (resumed)" in rerun.stdout
    assert table == (reader_gone[1] / "grades.csv").read_text()


@pytest.fixture(scope="module")
def changed(interrupted, toy_class):
    """student1 corrects their notebook, the instructor grades a test of student0 by hand (1 of
    its 2 points); the class is graded again."""
    root, source, release = toy_class
    _, _, _, out = interrupted
    submissions = root / "changed"
    shutil.copytree(root / "submissions", submissions)
    nbformat.write(answer(release, PERFECT), submissions / "student1" / "toy" / "toy.ipynb")
    from nbgrader.api import Gradebook
    from autograde.nbgrader_course import ensure_venv_on_path
    ensure_venv_on_path()
    with Gradebook(f"sqlite:///{out}/gradebook.db") as gb:
        gb.find_grade("test_add", "toy", "toy", "student0").manual_score = 1
        gb.db.commit()
    autograded = {s: out / "autograded" / s / "toy" / "toy.ipynb" for s in ("student0", "student2")}
    before = {s: path.stat().st_mtime_ns for s, path in autograded.items()}
    rerun = autograde(submissions, out, source, "--no-sandbox", jobs=1)
    untouched = before == {s: path.stat().st_mtime_ns for s, path in autograded.items()}
    return rerun, untouched, (out / "grades.csv").read_text()


def test_a_changed_submission_is_graded_again_and_only_it(changed):
    """(--regrade, which grades all, is tested in test_autograde.py.)"""
    rerun, untouched, table = changed
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "2 already graded, 1 to grade" in rerun.stderr
    assert graded_now(rerun.stderr) == ["student1"]
    assert untouched  # the others' autograded notebooks were not written again
    # student1 regraded; student0 kept, with the manual grade counted
    assert scores(table) == {**SCORES, "student1": "6", "student0": "5"}


def test_another_lessons_new_release_regrades_nothing(changed, toy_class, tmp_path):
    """--earlier-releases counts in the fingerprint of its own assignment only."""
    root, source, _ = toy_class
    earlier = tmp_path / "earlier.json"
    earlier.write_text('{"other_lesson": {"other_lesson": [[["cell", "code", null]]]}}')
    rerun = autograde(root / "changed", root / "out", source, "--no-sandbox", "--earlier-releases", str(earlier),
                      jobs=1)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "3 already graded, 0 to grade" in rerun.stderr
