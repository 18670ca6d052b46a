"""Local SGD on 2 CPU processes: with K = 1 it is data-parallel training (plain SGD), and it
synchronises once per K optimizer steps (plus once at the end) instead of once per step."""
import pytest

import helpers
from helpers import local_sgd
from helpers.exercises import parameter_difference

STEPS = 8  # 128 examples, 8 per process and batch, 2 processes


@pytest.fixture(scope="module")
def train_data(tokenizer):
    with helpers.quiet():
        return helpers.tokenize_data(helpers.load_data(sizes={"train": 128, "validation": 8, "test": 8}),
                                     tokenizer)["train"]


@pytest.fixture(scope="module")
def sgd_rows(train_data, tokenizer):
    rows = local_sgd.measure_local_sgd(train_data, tokenizer, variants=(None, 1, 4), batch_size=8,
                                       optimizer="sgd", learning_rate=0.05)
    return {row["local_sgd_steps"]: row for row in rows}


def test_k1_with_sgd_is_data_parallel_training(sgd_rows):
    data_parallel, k1, k4 = sgd_rows[None], sgd_rows[1], sgd_rows[4]
    assert data_parallel["optimizer_steps"] == k1["optimizer_steps"] == STEPS
    assert parameter_difference(data_parallel["parameters"], k1["parameters"]) < 1e-5
    # and the comparison can tell: K = 4 trains another model
    assert parameter_difference(data_parallel["parameters"], k4["parameters"]) > 1e-4


def test_synchronisations_counted(sgd_rows):
    data_parallel, k1, k4 = sgd_rows[None], sgd_rows[1], sgd_rows[4]
    assert data_parallel["synchronisations"] == STEPS and data_parallel["parameter_averages"] == 0
    assert data_parallel["gradient_all_reduces"] >= STEPS
    # LocalSGD: no gradient all-reduce at all; an average every K steps and one when the block ends
    assert k1["gradient_all_reduces"] == k4["gradient_all_reduces"] == 0
    assert k1["synchronisations"] == STEPS + 1 and k4["synchronisations"] == STEPS // 4 + 1
    # the steps done at each average (lesson 6's timeline draws them): every K-th, then the end of the block
    assert k4["average_after_steps"] == [4, 8, 8] and k1["average_after_steps"] == [*range(1, STEPS + 1), STEPS]
    assert data_parallel["average_after_steps"] == [] and data_parallel["processes"] == 2
    assert local_sgd.synchronisations_saved(list(sgd_rows.values()))[4] == STEPS / (STEPS // 4 + 1)
    assert k4["bytes_sent"] < data_parallel["bytes_sent"] / 2


def test_k1_with_adam_is_not_data_parallel_training(train_data, tokenizer):
    """Adam keeps moments per process: averaging the models is not averaging the gradients."""
    rows = local_sgd.measure_local_sgd(train_data, tokenizer, variants=(None, 1), batch_size=8)
    assert parameter_difference(rows[0]["parameters"], rows[1]["parameters"]) > 1e-4


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="optimizer"):
        local_sgd.measure_local_sgd(None, None, optimizer="adamw")
    with pytest.raises(ValueError, match="local_sgd_steps"):
        local_sgd.train_local_sgd(None, None, local_sgd_steps=0)
