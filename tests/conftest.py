"""Shared fixtures. Tests never reach a model hub: the hub code paths run on local folders."""
import os

from course.lessons import KERNEL_ENVIRONMENT

# a kernel's environment, in this process and the ones it starts (kernels, torchrun,
# notebook_launcher): offline, and one torch thread (two that spin-wait for each other crawl)
for name, value in KERNEL_ENVIRONMENT.items():
    os.environ.setdefault(name, value)

import resource  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

import background  # noqa: E402
import helpers  # noqa: E402
import lesson_runs  # noqa: E402
from autograde_toy import require_sandbox  # noqa: E402


@pytest.fixture(scope="session")
def tokenizer():
    return helpers.load_tokenizer()


@pytest.fixture(scope="session")
def small_data(tokenizer):
    """A small tokenized corpus: 60 training pairs, 40 for validation."""
    with helpers.quiet():
        return helpers.tokenize_data(helpers.load_data(sizes={"train": 60, "validation": 40, "test": 8}),
                                     tokenizer)


# A module that executes notebooks, grades a class, drives a browser or trains at real sizes says
# so itself (`pytestmark = pytest.mark.slow`): `make quick` (pytest -m "not slow") leaves it out.


def pytest_configure(config):
    config.addinivalue_line("markers", "lesson_run(parameter, mistakes=False): the test reads the run "
                            "(lesson_runs.executed) of the lesson its `parameter` names, with its typical "
                            "mistakes tried (lesson_runs.checked) if `mistakes`; the runs start in the "
                            "background once the tests are collected")


def pytest_collection_modifyitems(items):
    # The modules that read a background job or a lesson run go last (whole modules, so that their
    # module-scoped fixtures are set up once): the jobs run beside the other tests meanwhile. Among
    # them, the readers of what is done first go first (the lesson runs, then the jobs in the order
    # they run), so that their own work overlaps the jobs still running instead of following them.
    rank = {}
    for item in items:
        rank[item.module] = max(rank.get(item.module, 0), waits_for(item))
    items.sort(key=lambda item: rank[item.module])


def waits_for(item):
    """0: a test that reads no background work; 1: it reads a lesson run; 2 + i: the i-th job."""
    jobs = background.names()
    used = [2 + index for index, name in enumerate(jobs) if name in item.fixturenames]
    return max([*used, 1 if item.get_closest_marker("lesson_run") is not None else 0])


def lesson_read_by(item):
    """The lesson whose run a `lesson_run` test reads (its parameter: a name or a notebook's path)."""
    value = item.callspec.params[item.get_closest_marker("lesson_run").args[0]]
    return getattr(value, "stem", value)


def pytest_collection_finish(session):
    """The selected tests are known (-k, -m applied): start the lesson runs and the jobs
    (background.py) they will read, beside the tests, until a test asks for them."""
    if session.config.option.collectonly:
        return
    readers = [item for item in session.items if item.get_closest_marker("lesson_run")]
    if readers:
        lesson_runs.start_runs(sorted({lesson_read_by(item) for item in readers}),
                               mistaken={lesson_read_by(item) for item in readers
                                         if item.get_closest_marker("lesson_run").kwargs.get("mistakes")})
    background.start_used(session.items)


def pytest_sessionfinish(session):
    background.stop()  # a session stopped early (-x, Ctrl-C) does not wait for the running job


def pytest_terminal_summary(terminalreporter):
    """Where the time went beside the tests: each background job and lesson run, and the CPU time
    the session's own processes used (a suite that keeps the CPUs busy needs less work, not more jobs)."""
    timeline = background.timeline()
    if timeline:
        terminalreporter.section("background jobs and lesson runs (seconds since the session began)")
    for name, start, end in timeline:
        terminalreporter.write_line(f"{start:7.1f} - {end:7.1f}  {end - start:6.1f}  {name}")
    user, system = session_cpu_seconds()
    wall = time.monotonic() - _SESSION_BEGAN
    terminalreporter.write_line(f"the session's processes used {user + system:.0f} CPU s (user {user:.0f}, "
                                f"system {system:.0f}) in {wall:.0f} s: {(user + system) / wall:.2f} of the "
                                f"{os.cpu_count()} CPUs")


def session_cpu_seconds():
    """(user, system) CPU seconds of this process and its descendants: the ones it waited for
    (getrusage), and the others (a pool that ends at exit, the orphans it adopted: see below) with
    the ones they waited for. Not /proc/stat: on a shared machine that counts the others' work too.
    A lower bound: a kernel killed with its sandbox is waited for by nobody (course/bench/grading.py)."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = own.ru_utime + reaped.ru_utime, own.ru_stime + reaped.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for fields in _unwaited_descendants():
        user += (fields[11] + fields[13]) / tick  # utime, cutime
        system += (fields[12] + fields[14]) / tick  # stime, cstime
    return user, system


def _unwaited_descendants():
    """/proc/<pid>/stat's fields after the command (state first) of every descendant not waited for."""
    stats = {}
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = path.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        stats[int(path.parent.name)] = [fields[0], *map(int, fields[1:])]
    children = {}
    for pid, fields in stats.items():
        children.setdefault(fields[1], []).append(pid)  # ppid
    found, stack = [], list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        found.append(stats[pid])
        stack += children.get(pid, [])
    return found


_SESSION_BEGAN = time.monotonic()
# The session adopts its orphans (PR_SET_CHILD_SUBREAPER): a grader's forkserver, the parent of its
# workers and their kernels, outlives the grader, and would take their CPU seconds to init. They
# stay zombies until the session ends, so that _unwaited_descendants reads their times.
background.adopt_orphans()


@background.job
def graded_class_job():
    """The session's one real class, every lesson in one batch: (its folder, lesson_runs.GradedClass)."""
    lessons = lesson_runs.graded_lessons()
    assert lessons, "no lesson in solutions/ has a release in notebooks/"
    root = background.folder("autograde-lessons-")
    return root, lesson_runs.grade_lessons(root, lessons)


@pytest.fixture(scope="session")
def graded_class(graded_class_job):
    """The graded batch of every lesson (lesson_runs.grade_lessons), read by many tests."""
    require_sandbox()
    root, graded = graded_class_job.result()
    yield graded
    shutil.rmtree(root, ignore_errors=True)
