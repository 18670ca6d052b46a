"""Shared fixtures. Tests never reach a model hub: the hub code paths run on local folders."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# one torch thread, in this process and the ones it starts (kernels, torchrun, notebook_launcher):
# on a busy machine two OpenMP threads that spin-wait for each other crawl (see course/run.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import shutil  # noqa: E402
import tempfile  # noqa: E402
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


# Whole modules that execute notebooks, grade a class, drive a browser or train at real sizes:
# `make quick` (pytest -m "not slow") leaves them out for day-to-day work; `make test` runs all.
SLOW_MODULES = {"test_autograde", "test_autograde_lessons", "test_autograde_mistakes", "test_bench", "test_browser", "test_compare",
                "test_learning", "test_notebooks", "test_release"}


# Tests that read a lesson's papermill run (lesson_runs.executed), parametrized by the lesson
USES_LESSON_RUNS = {"test_lesson_runs", "test_solution_passes_its_own_tests"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    # The modules that read a background job or a lesson run go last (whole modules, so that their
    # module-scoped fixtures are set up once): the jobs run beside the other tests meanwhile.
    late = {item.module for item in items if reads_background(item)}
    items.sort(key=lambda item: item.module in late)


def reads_background(item):
    return bool(background.offered() & set(item.fixturenames)) or item.originalname in USES_LESSON_RUNS


def pytest_collection_finish(session):
    """The selected tests are known (-k, -m applied): start the lesson runs and the heavy jobs
    (background.py) they will read, beside the tests, until a test asks for them."""
    if session.config.option.collectonly:
        return
    needed = [item.callspec.id for item in session.items if item.originalname in USES_LESSON_RUNS]
    if needed:
        lesson_runs.start_runs(sorted(set(needed)))
    background.start_offered(session.items)


def pytest_sessionfinish(session):
    background.cancel_queued()  # a session stopped early (-x, Ctrl-C) starts no more jobs


def _grade_class():
    lessons = lesson_runs.graded_lessons()
    if not lessons:
        return None, None
    root = Path(tempfile.mkdtemp(prefix="autograde-lessons-"))
    return root, lesson_runs.grade_lessons(root, lessons)


background.offer("graded_class", _grade_class)


@pytest.fixture(scope="session")
def graded_class():
    """One autograde batch of every lesson (lesson_runs.grade_lessons), read by many tests."""
    require_sandbox()
    root, graded = background.result("graded_class")
    if graded is None:
        pytest.skip("no lessons in solutions/ with a release in notebooks/ yet")
    yield graded
    shutil.rmtree(root, ignore_errors=True)
