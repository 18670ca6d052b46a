"""Real Unix users for the tests of a real deployment (test_hub_permissions.py, test_hub_deployment.py).

They run as root, which creates the users hub-teacher, hub-anna and hub-bram when missing, and
where those users can run the course's Python: in .ci/run's second half, which opens the folders
above the clone and Python for other users. Elsewhere they skip, saying why; under
COURSE_REQUIRE_HUB_USERS=1 (.ci/run) they fail instead.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TEACHER, ANNA, BRAM = "hub-teacher", "hub-anna", "hub-bram"
BIN = Path(sys.executable).parent  # the course's .venv: nbgrader, jupyterhub


def _cannot(message):
    if os.environ.get("COURSE_REQUIRE_HUB_USERS") == "1":  # .ci/run: must run there
        pytest.fail(message)
    pytest.skip(message)


def home(user):
    return Path(f"/home/{user}")


def as_user(user, *command, cwd=None, env=()):
    """`command` as `user`, in a clean environment (HOME, PATH with the course's .venv, `env`)."""
    return subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"HOME={home(user)}",
                           f"PATH={BIN}:/usr/bin:/bin", "LANG=C.UTF-8", *env, *command],
                          cwd=cwd or home(user), capture_output=True, text=True, timeout=180)


def require_users(*users):
    """Create the users that are missing, with homes of mode 0700; skip (or fail, see above) where
    a test cannot use them."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        _cannot("creates Unix users: root only (CI)")
    for user in users:
        if subprocess.run(["id", "-u", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--create-home", user], check=True)
        home(user).chmod(0o700)  # as docs/hub.md sets a real deployment up (useradd makes 0755)
    if as_user(users[0], sys.executable, "-c", "import nbgrader").returncode != 0:
        _cannot("other users cannot run the course's Python here (.ci/run opens it for its second half)")


def clean_homes(users, *names):
    """Remove what a test left in the users' homes: the folders `names` and nbgrader's cache of
    submissions (which lists them as the user's own)."""
    for user in users:
        for name in (*names, ".local/share/jupyter/nbgrader_cache"):
            shutil.rmtree(home(user) / name, ignore_errors=True)
