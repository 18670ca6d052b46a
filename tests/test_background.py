"""The background jobs' processes start from the session's environment, not from os.environ as it
is at that moment: a test in the main thread may be inside accelerate's notebook_launcher, which sets
WORLD_SIZE, MASTER_PORT, ... while its processes run (seen: kernels of the mistake runs that waited
for a second process, or failed on the launcher's port). And the order the jobs start in: the early
ones (which need no model) while the model pre-trains."""
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


def test_the_early_jobs_run_first_then_each_job_in_the_order_defined(monkeypatch):
    """background.names(): the order the jobs start in, and the order of their readers (conftest.py)."""
    monkeypatch.setattr(background, "_functions", {})
    monkeypatch.setattr(background, "_early", set())
    for name, early in (("graded", False), ("toy", True), ("mistakes", False), ("shards", True)):
        def function():
            pass
        function.__name__ = name
        background.job(function, early=early)
    assert background.names() == ["toy", "shards", "graded", "mistakes"]
