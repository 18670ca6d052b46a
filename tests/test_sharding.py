"""Sharded training on 2 CPU processes (lesson 10): FSDP2 (`fully_shard`) trains the same model as data
parallelism (DDP), and each process holds half of the parameters, gradients and optimizer state."""
import pytest
import torch

import helpers
from helpers import sharding

STEPS = 4
LOSS_TOLERANCE = 1e-5  # float32 rounding; measured here: 0.0 over 4 and 6 steps


@pytest.fixture(scope="module")
def train_data(tokenizer):
    with helpers.quiet():
        return helpers.tokenize_data(helpers.load_data(sizes={"train": 32, "validation": 8, "test": 8}),
                                     tokenizer)["train"]


@pytest.fixture(scope="module")
def measured(train_data, tokenizer):
    return helpers.measure_sharding(train_data, tokenizer, batch_size=4, steps=STEPS)


def by_mode(measured):
    return {row["mode"]: row for row in measured["rows"]}


def test_fully_sharded_training_gives_the_losses_of_data_parallel_training(measured):
    rows = by_mode(measured)
    assert [len(row["loss"]) for row in rows.values()] == [STEPS, STEPS]
    assert helpers.loss_difference(measured["rows"]) < LOSS_TOLERANCE
    assert rows["data parallel"]["loss"][-1] < rows["data parallel"]["loss"][0]  # it trains


def test_with_sgd_too(train_data, tokenizer):
    """AdamW's step hardly depends on the gradients' scale: plain SGD shows a sum where a mean belongs."""
    rows = helpers.measure_sharding(train_data, tokenizer, batch_size=4, steps=3, optimizer="sgd", learning_rate=0.5)
    assert helpers.loss_difference(rows["rows"]) < LOSS_TOLERANCE
    assert all(row["bytes"]["optimizer_state"] == [0, 0] for row in rows["rows"])  # plain SGD keeps no state


def test_each_process_holds_half_of_every_part(measured):
    rows = by_mode(measured)
    whole, sharded = rows["data parallel"], rows["fully sharded"]
    parameter_tensors = 41  # the course's model: AdamW keeps a 4-byte step per tensor, in every process
    model_bytes = 4 * whole["num_parameters"]
    assert whole["bytes"]["parameters"] == whole["bytes"]["gradients"] == [model_bytes, model_bytes]
    assert whole["bytes"]["optimizer_state"] == [2 * model_bytes + 4 * parameter_tensors] * 2
    for part in ("parameters", "gradients"):
        assert sum(sharded["bytes"][part]) == model_bytes, part       # the pieces make the whole model
        assert max(sharded["bytes"][part]) <= 0.51 * model_bytes, part
    assert all(abs(size - model_bytes - 4 * parameter_tensors) <= 0.01 * model_bytes
               for size in sharded["bytes"]["optimizer_state"])


def test_the_collectives_of_a_step(measured):
    """DDP all-reduces the gradients once; FSDP reduce-scatters them once and all-gathers the parameters
    twice (forward and backward), except the root's, which stay gathered after the forward."""
    rows = by_mode(measured)
    model_bytes = 4 * rows["data parallel"]["num_parameters"]
    assert rows["data parallel"]["bytes_per_step"] == {"all-reduce": model_bytes, "all-gather": 0, "reduce-scatter": 0}
    sharded = rows["fully sharded"]["bytes_per_step"]
    assert sharded["all-reduce"] == 0 and sharded["reduce-scatter"] == model_bytes
    assert model_bytes < sharded["all-gather"] < 2 * model_bytes


def test_accelerate_ignores_an_fsdp_plugin_on_the_cpu(measured):
    """Lesson 10 says so (the pinned accelerate, state.py); when this fails, the lesson must change."""
    assert measured["accelerate"] == {"distributed_type": "MULTI_CPU", "model": "DistributedDataParallel"}


def test_zero_arithmetic():
    stages = [sharding.zero_bytes_per_process(1000, 4, stage) for stage in range(4)]
    assert stages[0] == {"parameters": 4000, "gradients": 4000, "optimizer_state": 8000}
    assert stages[1] == {"parameters": 4000, "gradients": 4000, "optimizer_state": 2000}
    assert stages[2] == {"parameters": 4000, "gradients": 1000, "optimizer_state": 2000}
    assert stages[3] == {"parameters": 1000, "gradients": 1000, "optimizer_state": 2000}
    assert sharding.zero_bytes_per_process(1000, 1, 3) == stages[0]
    with pytest.raises(ValueError, match="stage"):
        sharding.zero_bytes_per_process(1000, 4, 4)


def test_local_bytes_counts_a_process_pieces():
    assert sharding.local_bytes([torch.zeros(3, 4), None, torch.zeros(2, dtype=torch.bfloat16)]) == 52
    counted = helpers.count_on_sharded_model(sharding.local_bytes)
    first, second = counted["processes"]
    # 6 x 8 and 6 split evenly; the 3 rows of 3 x 6 and 3 split 2 and 1
    assert first["parameters"]["reference"] == 4 * (24 + 3 + 12 + 2)
    assert second["parameters"]["reference"] == 4 * (24 + 3 + 6 + 1)
    assert first["parameters"]["reference"] + second["parameters"]["reference"] == counted["whole_parameters"]
    # AdamW: two moments of each piece, and a 4-byte step per tensor in each process
    assert first["optimizer_state"]["reference"] == 2 * first["parameters"]["reference"] + 4 * 4
    assert all(parts[part]["yours"] == parts[part]["reference"] for parts in (first, second) for part in parts)
