"""Shared fixtures. Tests never reach a model hub: the hub code paths run on local folders."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# one torch thread, in this process and the ones it starts (kernels, torchrun, notebook_launcher):
# on a busy machine two OpenMP threads that spin-wait for each other crawl (see course/run.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

import helpers  # noqa: E402


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


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
