"""Identity and permissions of nbgrader's folder exchange with real Unix users (a real deployment,
docs/hub.md), without the hub: what the hub relies on for each student.

Users hub-teacher, hub-anna and hub-bram (created when missing; root only). The teacher releases
lesson 01 from a course folder in their home; anna fetches and submits; then:
- bram cannot list the exchange's inbound folder (so cannot find anna's submission) nor read the
  teacher's course folder (gradebook, collected submissions);
- bram can still hand in under anna's id (CourseDirectory.student_id is the student's own
  setting): nbgrader cannot prevent it, and `nbgrader collect` must warn about it (docs/hub.md
  says to read that warning; the grader also flags the hub's save stamp, test_hub_grading.py).
Runs where those users can run the course's Python: as root in .ci/run's second half, which opens
the folders above the clone and Python; elsewhere it skips, saying why (hub_users.py).
"""
import shutil
import tempfile
from pathlib import Path

import pytest

from course.paths import NOTEBOOKS
from hub_users import ANNA, BIN, BRAM, TEACHER, as_user, clean_homes, require_users

pytestmark = pytest.mark.slow
LESSON = "01_basic_loop"
COURSE = "efficient-training"
NBGRADER = str(BIN / "nbgrader")


@pytest.fixture(scope="module")
def exchange():
    require_users(TEACHER, ANNA, BRAM)
    clean_homes((TEACHER, ANNA, BRAM), LESSON, "course")
    root = Path(tempfile.mkdtemp(prefix="hub-exchange-"))
    root.chmod(0o755)
    (root / "exchange").mkdir(mode=0o777)
    (root / "exchange").chmod(0o777)
    yield root / "exchange"
    shutil.rmtree(root, ignore_errors=True)
    clean_homes((TEACHER, ANNA, BRAM), LESSON, "course")


def nbgrader(user, command, exchange, *extra):
    run = as_user(user, NBGRADER, command, LESSON, "--course", COURSE, f"--Exchange.root={exchange}", *extra)
    return run


def test_the_exchange_keeps_students_apart_and_collect_warns_of_a_false_id(exchange):
    course = Path(f"/home/{TEACHER}/course")
    released = as_user(TEACHER, "mkdir", "-m", "700", "-p", str(course))
    assert released.returncode == 0, released.stderr
    run = nbgrader(TEACHER, "release_assignment", exchange, f"--CourseDirectory.root={course}",
                   f"--CourseDirectory.release_directory={NOTEBOOKS}")
    assert run.returncode == 0, run.stdout + run.stderr
    for user in (ANNA, BRAM):
        run = nbgrader(user, "fetch_assignment", exchange)
        assert run.returncode == 0, run.stdout + run.stderr
    run = nbgrader(ANNA, "submit", exchange)
    assert run.returncode == 0, run.stdout + run.stderr

    inbound = exchange / COURSE / "inbound"
    listing = as_user(BRAM, "ls", str(inbound))
    assert listing.returncode != 0 and "Permission denied" in listing.stderr, listing
    assert as_user(BRAM, "ls", str(course)).returncode != 0, "a student reads the teacher's course folder"

    run = nbgrader(BRAM, "submit", exchange, f"--CourseDirectory.student_id={ANNA}")  # a false id
    assert run.returncode == 0, run.stdout + run.stderr
    run = nbgrader(TEACHER, "collect", exchange, f"--CourseDirectory.root={course}", "--update")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"owned by {BRAM}" in run.stdout + run.stderr and "cheating attempt" in run.stdout + run.stderr, \
        run.stdout + run.stderr
