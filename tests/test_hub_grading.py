"""What nbgrader's exchange leaves beside a notebook, through the course's grader (autograde/exchange.py).

One batch (an early background job) grades a toy class in nbgrader's `submitted/` layout as `nbgrader collect` leaves it:
- `ontime`: answered, with the timestamp.txt and submission_secret.txt that the exchange writes;
  after grading, `nbgrader release_feedback` from OUT must put the feedback into the exchange under
  the name `nbgrader fetch_feedback` looks for (a hash of the secret and the notebook's name);
- `garbled`: the same with a timestamp.txt that is not a time (an LMS upload, a hand edit): full
  marks, status graded, a clear line in the detail, and its feedback releases too;
- `copier`: a notebook whose hub stamp (metadata `efficient_training.saved_by`) names another
  student: graded, and flagged in the row's detail;
- `tampered`: a submission_secret.txt edited by hand (not nbgrader's hex): graded, the row's detail
  says its feedback goes by hand, and `nbgrader release_feedback` from OUT still releases the
  others' (nbgrader's own stops with FileNotFoundError at that folder).
"""
import csv
import subprocess
import sys
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import notebook_hash

import background
from autograde_toy import PERFECT, answer, released_toy, require_sandbox, write_source
from course.paths import ROOT as REPO

pytestmark = pytest.mark.slow
SECRETS = {"ontime": "ab" * 64, "garbled": "cd" * 64, "copier": "ef" * 64}
TAMPERED_SECRET = "my own secret, edited by hand"
TIMESTAMPS = {"ontime": "2026-12-01 14:00:00.000000 UTC", "garbled": "next tuesday, honest",
              "copier": "2026-12-01 14:05:00.000000 UTC", "tampered": "2026-12-01 14:06:00.000000 UTC"}
OPTIONS = ["--cell-timeout", "10", "--timeout", "30", "--memory-mb", "2048", "--preload", "numpy",
           "--protected", "builtins", "math", "numpy", "IPython", "ipykernel"]


@background.job(early=True)
def hub_class_job():
    """The class in nbgrader's `submitted/` layout graded beside the tests: (root, out, rows)."""
    root = background.folder("hub-grading-")
    source = write_source(root / "source")
    release = released_toy(source, root / "seed")
    submitted = root / "submitted"
    for student in TIMESTAMPS:
        folder = submitted / student / "toy"
        folder.mkdir(parents=True)
        notebook = answer(release, PERFECT)
        if student == "copier":
            notebook.metadata["efficient_training"] = {"saved_by": ["ontime", "copier"]}
        nbformat.write(notebook, folder / "toy.ipynb")
        (folder / "timestamp.txt").write_text(TIMESTAMPS[student])
        (folder / "submission_secret.txt").write_text(SECRETS.get(student, TAMPERED_SECRET))
    out = root / "out"
    run = background.run([sys.executable, "-m", "autograde", "--submissions", str(submitted),
                          "--out", str(out), "--source", str(source), "--jobs", "2", *OPTIONS],
                         cwd=REPO, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    with open(out / "grades.csv", newline="") as table:
        rows = {row["student_id"]: row for row in csv.DictReader(table)}
    return root, out, rows


@pytest.fixture(scope="module")
def hub_class(hub_class_job):
    require_sandbox()
    return hub_class_job.result()


def test_a_malformed_timestamp_never_costs_the_grade(hub_class):
    _, _, rows = hub_class
    row = rows["garbled"]
    assert (row["status"], float(row["score"])) == ("graded", 6.0), row
    assert "timestamp.txt is not a time ('next tuesday, honest'): graded as submitted on time" \
        in row["detail"], row
    assert "timestamp" not in rows["ontime"]["detail"], rows["ontime"]


def release_feedback(out, exchange):
    """`nbgrader release_feedback` from OUT, as docs/hub.md gives it."""
    exchange.mkdir()
    released = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), "release_feedback", "toy", "--course", "toy",
         f"--Exchange.root={exchange}"], cwd=out, capture_output=True, text=True, timeout=120)
    assert released.returncode == 0, released.stdout[-2000:] + released.stderr[-3000:]
    return released.stdout + released.stderr


def test_feedback_goes_back_through_the_exchange(hub_class):
    root, out, rows = hub_class
    assert all(rows[s]["status"] == "graded" for s in SECRETS), rows
    exchange = root / "exchange"
    release_feedback(out, exchange)
    for student, secret in SECRETS.items():
        assert (out / "feedback" / student / "toy" / "submission_secret.txt").read_text() == secret
        page = exchange / "toy" / "feedback" / f"{notebook_hash(secret=secret, notebook_id='toy')}.html"
        assert page.is_file(), f"{student}'s feedback is not where fetch_feedback looks: {page}"
        assert page.read_bytes() == (out / "feedback" / student / "toy" / "toy.html").read_bytes()
    # the secret never reaches the kernel: it is not in the student's scratch files
    assert not list((out / "autograded").rglob("*.py"))


def test_a_notebook_saved_by_another_student_is_flagged(hub_class):
    _, _, rows = hub_class
    row = rows["copier"]
    assert (row["status"], float(row["score"])) == ("graded", 6.0), row
    assert "toy.ipynb was saved on the hub by ontime, not only by copier" in row["detail"], row
    assert "saved on the hub" not in rows["ontime"]["detail"]


def test_a_tampered_secret_holds_back_only_its_own_feedback(hub_class):
    root, out, rows = hub_class
    row = rows["tampered"]
    assert (row["status"], float(row["score"])) == ("graded", 6.0), row
    assert ("submission_secret.txt is not the one nbgrader's submit writes: this feedback is not "
            "released through the exchange; send it by hand") in row["detail"], row
    assert not any("submission_secret" in rows[s]["detail"] for s in SECRETS), rows
    assert (out / "feedback" / "tampered" / "toy" / "toy.html").is_file()
    assert not (out / "feedback" / "tampered" / "toy" / "submission_secret.txt").exists()
    log = release_feedback(out, root / "exchange-tampered")
    assert "Not releasing" in log and "tampered" in log, log[-2000:]
    released = sorted(p.name for p in (root / "exchange-tampered" / "toy" / "feedback").iterdir())
    assert released == sorted(f"{notebook_hash(secret=secret, notebook_id='toy')}.html"
                              for secret in SECRETS.values())


def formgrader_view(course_root, **course_directory):
    """(average score, max score, submissions) of the toy, as nbgrader's formgrader (its API) shows it
    for the course folder `course_root`."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    config = Config()
    config.CourseDirectory.root = str(course_root)
    for name, value in course_directory.items():
        setattr(config.CourseDirectory, name, value)
    toy = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config).get_assignment("toy")
    return toy["average_score"], toy["max_score"], toy["num_submissions"]


def test_the_formgrader_of_out_shows_the_grades_and_a_course_folder_none(hub_class, tmp_path):
    """docs/hub.md: the formgrader of the grader's OUT shows the scores; that of a course folder into
    which submissions were only collected, as the hub's instructor Lab has, shows "0 / 0"."""
    root, out, rows = hub_class
    scores = [float(row["score"]) for row in rows.values()]
    assert formgrader_view(out) == (pytest.approx(sum(scores) / len(scores)), 6.0, len(rows))
    course = tmp_path / "course"
    shutil.copytree(root / "submitted", course / "submitted")
    assert formgrader_view(course, source_directory=str(root / "source")) == (0, 0, len(rows))
