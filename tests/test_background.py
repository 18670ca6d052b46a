"""The background jobs' processes start from the session's environment, not from os.environ as it
is at that moment: a test in the main thread may be inside accelerate's notebook_launcher, which sets
WORLD_SIZE, MASTER_PORT, ... while its processes run (seen: kernels of the mistake runs that waited
for a second process, or failed on the launcher's port)."""
import os
import sys

import background


def launcher_variable():
    return os.environ.get("WORLD_SIZE")


def test_a_jobs_pool_and_subprocesses_do_not_inherit_a_launch_in_progress(monkeypatch):
    assert "WORLD_SIZE" not in background.ENVIRONMENT, "the session itself must not run as 2 processes"
    monkeypatch.setenv("WORLD_SIZE", "2")  # as notebook_launcher does while its processes run
    with background.pool(max_workers=1) as pool:
        assert pool.submit(launcher_variable).result() is None
    run = background.run([sys.executable, "-c", "import os; print(os.environ.get('WORLD_SIZE'))"], timeout=60)
    assert run.stdout.strip() == "None"
