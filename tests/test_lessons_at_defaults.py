"""Every lesson at its defaults, as `make run` runs it and a student opens it: each runs from top to
bottom within SECONDS_LIMIT, and its test cells print their "Correct" line without writing to
stderr. `make test` runs the lessons at their small profile (lesson_runs.py); this module, minutes
of lesson runs, runs with COURSE_LESSONS_AT_DEFAULTS=1 in .ci/run after `make test`, as the hub's
journey does, so that the README's test command stays within its 10 minutes."""
import os
import re
import subprocess
import sys

import pytest

from course.paths import ROOT, lessons
from lesson_runs import faults_of_test_cells

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("COURSE_LESSONS_AT_DEFAULTS") != "1",
                                 reason="the lessons at their defaults: COURSE_LESSONS_AT_DEFAULTS=1 "
                                        "(.ci/run runs it)")]

# Generous: a lesson takes 10-40 s on a quiet 2-core CPU (make run); CI machines are often busy.
SECONDS_LIMIT = 240
REPORTED = re.compile(r"^(\d\d_\w+)\s+([\d.]+) s  \(cpu\s+[\d.]+ s\)  (.*)$", re.MULTILINE)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`python -m course.run` (make run, without the comparison): {lesson: (seconds, status)}, its folder."""
    out = tmp_path_factory.mktemp("at-defaults")
    ran = subprocess.run([sys.executable, "-m", "course.run", "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=1800)
    reported = {lesson: (float(seconds), status) for lesson, seconds, status in REPORTED.findall(ran.stdout)}
    assert set(reported) == set(lessons()), ran.stdout + ran.stderr[-3000:]
    return reported, out


@pytest.mark.parametrize("lesson", lessons())
def test_the_lesson_runs_at_its_defaults(run, lesson):
    reported, out = run
    seconds, status = reported[lesson]
    assert status == "ok", f"{lesson} failed after {seconds:.0f} s: {status}"
    faults = faults_of_test_cells(out / f"{lesson}.ipynb")
    assert not faults, "\n".join(faults)
    assert seconds < SECONDS_LIMIT, f"{lesson} took {seconds:.0f} s"
