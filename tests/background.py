"""The session's heavy, independent jobs (graded batches, the mistake runs), run beside the tests.

Most tests use one CPU core. A job that grades a class or runs lessons in kernels is a
subprocess that the tests only read afterwards, so it can start as soon as the session knows it
will be read: the module of the fixture that returns its result offers it when it is imported
(`offer`), and conftest.py starts the offered jobs whose fixture a collected test uses
(`start_offered`), one job at a time, in the order offered, on a thread of this process. The
fixture waits for the result (`result`); a job that was not started yet starts then.
"""
import concurrent.futures

_queue = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
_offers = {}   # fixture name -> the job's function
_jobs = {}     # fixture name -> Future of its job


def offer(fixture, function):
    """`function()` computes what the fixture named `fixture` returns (its name is unique)."""
    _offers.setdefault(fixture, function)


def offered():
    """The names of the fixtures whose job is offered."""
    return set(_offers)


def start_offered(items):
    """Queue the offered jobs whose fixture one of `items` (the collected tests) uses."""
    used = {name for item in items for name in getattr(item, "fixturenames", ())}
    for fixture in _offers:
        if fixture in used:
            _start(fixture)


def result(fixture):
    """The job's return value, waiting for it if it runs (raises what the job raised)."""
    return _start(fixture).result()


def _start(fixture):
    if fixture not in _jobs:
        _jobs[fixture] = _queue.submit(_offers[fixture])
    return _jobs[fixture]


def cancel_queued():
    """Cancel the jobs that have not started (a running one ends on its own)."""
    for job in _jobs.values():
        job.cancel()
