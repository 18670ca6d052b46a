"""The Makefile's apt installs (`apt_install`: chromium, bubblewrap) wait for another apt or dpkg
that holds dpkg's lock, as grading jobs starting together on one node would, and show apt's own
message when they fail.

They run the Makefile's macro for bubblewrap (installed already: apt still takes the lock) while
a process holds /var/lib/dpkg/lock-frontend as apt does (fcntl). As root with apt, under
COURSE_REQUIRE_APT=1 (.ci/run); elsewhere they skip.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

from course.paths import ROOT

LOCK = "/var/lib/dpkg/lock-frontend"
HOLD = ("import fcntl, sys, time\nlock = open(sys.argv[1], 'w')\nfcntl.lockf(lock, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\ntime.sleep(float(sys.argv[2]))")


if os.environ.get("COURSE_REQUIRE_APT") != "1":
    pytest.skip("the apt tests take dpkg's lock as root: .ci/run runs them (COURSE_REQUIRE_APT=1)",
                allow_module_level=True)


@pytest.fixture(autouse=True)
def apt():
    if os.geteuid() != 0 or not shutil.which("apt-get") or not shutil.which("bwrap"):
        pytest.fail("the apt tests need root, apt-get and bubblewrap installed")


def install_while_locked(seconds, lock_timeout):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, LOCK, str(seconds)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        run = subprocess.run(["make", "-s", "--eval", "apt-probe: ; @$(call apt_install,bubblewrap)", "apt-probe",
                              f"APT_LOCK_TIMEOUT={lock_timeout}"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
        return run, time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()


def test_an_install_waits_for_a_held_lock():
    run, seconds = install_while_locked(4, 120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert seconds >= 3.5, f"done in {seconds:.1f} s while the lock was held for 4 s"


def test_a_failed_install_shows_apts_message():
    run, _ = install_while_locked(60, 1)
    assert run.returncode != 0
    assert "dpkg frontend lock" in run.stdout + run.stderr, run.stdout + run.stderr
