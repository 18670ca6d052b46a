"""The session's heavy, independent jobs (the graded class, the toy gradings), run beside the tests.

Most tests use one CPU core. A job that grades a class or runs lessons in kernels is a
subprocess that the tests only read afterwards, so it can start as soon as the session knows it
will be read. A job is declared as a fixture:

    @background.job
    def graded_class_job():   # no arguments; returns what the tests read
        ...

makes a session fixture `graded_class_job` whose value is the job (`.result()` waits for what
the function returned, or raises what it raised). Once the tests are collected, conftest.py
starts the jobs that a selected test uses, directly or through another fixture (`start_used`),
one at a time, in the order they are defined, on a thread of this process; a job not started yet
starts when its result is asked for. A job that needs no model (a toy class) may be declared
`@background.job(early=True)`: the early jobs go first, while the lesson runs' pool pre-trains the
model that the other jobs wait for. The main thread is the session's critical path, but not all of
its toy gradings can go: in the pre-training's first minutes the main thread needs work that needs
no model (test_autograde.py's corpus, the resumed gradings), or it waits for the model (measured).

A session that ends early (-x, Ctrl-C) does not wait for the running job: `stop` cancels the jobs
not started and ends the running one's subprocesses. So a job starts its subprocesses with `run`
(each in a session of its own: SIGTERM to its process group, the grader's clean stop, then
SIGKILL), or as processes of a `multiprocessing` pool, which `stop` kills.
"""
import concurrent.futures
import contextlib
import ctypes
import functools
import multiprocessing
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

_queue = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
_functions = {}   # job name -> its function, in the order defined
_early = set()    # the names of the jobs that go first (job(early=True))
_futures = {}     # job name -> Future of its run
_running = set()  # the jobs' subprocesses (Popen) that run now
_folders = []     # the jobs' temporary folders (`folder`)
_lock = threading.Lock()
_stopping = threading.Event()
_began = time.monotonic()
_timeline = []    # (name, start, end): seconds since the session began, of each job and lesson run
# The environment as the session began. A test in the main thread may launch processes meanwhile
# (helpers.run_on_processes), and accelerate's notebook_launcher sets WORLD_SIZE, MASTER_PORT, ...
# in os.environ while they run: a kernel started then believes it is one of 2 processes and its
# Accelerator() waits for a partner or fails on that port. A job's processes start from this copy.
ENVIRONMENT = dict(os.environ)


def use_session_environment(environment):
    """Initializer of a job's process pool: the session's environment (ENVIRONMENT) instead of the
    one inherited at the moment the pool started its process."""
    os.environ.clear()
    os.environ.update(environment)


def pool(max_workers):
    """A `spawn` process pool for a job, whose processes have the session's environment."""
    return concurrent.futures.ProcessPoolExecutor(max_workers=max_workers,
                                                  mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=use_session_environment,
                                                  initargs=(ENVIRONMENT,))


class Job:
    """A fixture's handle on a background job."""

    def __init__(self, name):
        self.name = name

    def result(self):
        """What the job's function returned, waiting for it (raises what it raised)."""
        return _start(self.name).result()


def job(function=None, *, early=False):
    """Decorator: run `function()` in the background; a session fixture of its name gives its Job.
    early=True: it runs before the jobs that are not early (it needs no model)."""
    if function is None:
        return functools.partial(job, early=early)
    name = function.__name__
    _functions[name] = function
    if early:
        _early.add(name)

    @pytest.fixture(scope="session", name=name)
    def handle():
        return Job(name)

    handle.__doc__ = function.__doc__
    return handle


def names():
    """The fixture names of the jobs, in the order they run: the early ones, then the others, each
    in the order they were defined."""
    return sorted(_functions, key=lambda name: name not in _early)


def start_used(items):
    """Queue the jobs that one of `items` (the collected tests) uses."""
    used = {name for item in items for name in getattr(item, "fixturenames", ())}
    for name in names():
        if name in used:
            _start(name)


def _start(name):
    if name not in _futures:
        _futures[name] = _queue.submit(_timed, name, _functions[name])
    return _futures[name]


def _timed(name, function):
    start = time.monotonic()
    try:
        return function()
    finally:
        note(name, start, time.monotonic())


def note(name, start, end):
    """Record that `name` ran from `start` to `end` (time.monotonic()) for `timeline`."""
    _timeline.append((name, start - _began, end - _began))


def timeline():
    """[(name, start, end)]: when each job and lesson run ran, in seconds since the session began,
    in the order they started (conftest.py prints it after the tests: where the time went)."""
    return sorted(_timeline, key=lambda entry: entry[1])


def folder(prefix):
    """A new temporary folder for a job, removed when the session ends (also after a job that
    failed or was stopped, whose fixture never ran)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    _folders.append(path)
    return path


def run(command, *, timeout, **options):
    """subprocess.run(command, capture_output=True, text=True, timeout=timeout, **options) for a job,
    in a session of its own, so that `stop` can end it and everything it started."""
    with _lock:
        if _stopping.is_set():
            raise RuntimeError("the test session is stopping: no new job")
        options.setdefault("env", ENVIRONMENT)
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, **options)
        _running.add(process)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:
        _signal(process, signal.SIGKILL)
        process.communicate()
        raise
    finally:
        with _lock:
            _running.discard(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def stop(grace_seconds=10):
    """The session ends: cancel the jobs not started; end the running job's subprocesses (SIGTERM to
    their process groups, SIGKILL after `grace_seconds`) and this process's multiprocessing children;
    remove the jobs' folders."""
    _stopping.set()
    for future in _futures.values():
        future.cancel()
    with _lock:
        running = list(_running)
    for process in running:
        _signal(process, signal.SIGTERM)
    for process in running:
        try:
            process.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
    for child in multiprocessing.active_children():  # the lesson runs' pool
        child.kill()
    for path in _folders:
        shutil.rmtree(path, ignore_errors=True)


def _signal(process, number):
    try:
        os.killpg(process.pid, number)  # its own session: the process group is the job's alone
    except ProcessLookupError:
        pass


def adopt_orphans(adopt=True):
    """Make this process the subreaper of its descendants' orphans (PR_SET_CHILD_SUBREAPER), or not."""
    ctypes.CDLL(None).prctl(36, int(adopt))


@contextlib.contextmanager
def orphans_to_init():
    """Meanwhile the session adopts no orphan (conftest.py makes it their subreaper, to count their
    CPU), as an instructor's shell does not: an orphaned kernel's parent poller (ipykernel) ends the
    kernel when its parent becomes init, and would not see its parent go under the session."""
    adopt_orphans(False)
    try:
        yield
    finally:
        adopt_orphans()
