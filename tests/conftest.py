"""Shared fixtures. Tests never reach a model hub: the hub code paths run on local folders."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

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
