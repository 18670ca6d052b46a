"""Sharded training on 2 CPU processes (lesson 10): FSDP2 (`fully_shard`) trains the same model as data
parallelism (DDP), and each process holds half of the parameters, gradients and optimizer state."""
import collections
import json
import math
import os
import re
import tempfile
import types
from pathlib import Path
from unittest import mock

import pytest
import torch
from transformers import TrainingArguments

import helpers
from helpers import fsdp_step, sharding

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
    twice (forward and backward), except the root's, which stay gathered after the forward. FSDP2 cuts
    each tensor's first dimension into equal pieces, padding it to a multiple of the processes
    (_fsdp_param.py, _chunk_with_empty): the vocabulary's 221 rows travel as 222."""
    rows = by_mode(measured)
    model_bytes = 4 * rows["data parallel"]["num_parameters"]
    padded = 4 * sum(math.ceil(p.shape[0] / 2) * 2 * p[0].numel() for p in helpers.load_model().parameters())
    assert rows["data parallel"]["bytes_per_step"] == {"all-reduce": model_bytes, "all-gather": 0, "reduce-scatter": 0}
    sharded = rows["fully sharded"]["bytes_per_step"]
    assert sharded["all-reduce"] == 0 and sharded["reduce-scatter"] == padded
    assert padded < sharded["all-gather"] < 2 * padded


def test_one_fsdp_step_as_lesson_10_draws_it(measured):
    """The events recorded in the last step agree with the collectives counted, in FSDP2's order: each layer
    gathered, computed and freed in the forward pass, gathered again, computed, freed and reduce-scattered
    in the backward pass; the root gathered once (reshard_after_forward=None is False for the root)."""
    sharded = by_mode(measured)["fully sharded"]
    events = sharded["step_events"]
    counted = collections.Counter(event for event, _ in events)
    assert counted["all-gather"] == sharded["calls_by_step"][-1]["all-gather"] == 7
    assert counted["reduce-scatter"] == sharded["calls_by_step"][-1]["reduce-scatter"] == 4
    layers = [name for name in sharded["sharded_modules"] if name]
    assert layers == ["bert.embeddings", "bert.encoder.layer.0", "bert.encoder.layer.1"]
    for layer in layers:
        assert [event for event, group in events if group == layer] == [
            "all-gather", "forward", "free", "all-gather", "backward", "free", "reduce-scatter"], layer
    assert [event for event, group in events if group == ""] == ["all-gather", "forward", "backward", "free",
                                                                 "reduce-scatter"]
    assert events[fsdp_step.backward_start(events)] == ("all-gather", layers[-1]), "the last layer first"
    assert "2 × 3 + 1 = 7 all-gathers" in helpers.all_gathers_explained(sharded)
    assert "3 + 1 = 4." in helpers.all_gathers_explained(sharded)


def test_ddp_builds_its_buckets_again_after_the_first_step(measured):
    """One bucket in the first step, then 2 (the first at most 1 MiB): lesson 10's fractional 1.8 calls."""
    data_parallel = by_mode(measured)["data parallel"]
    assert [step["all-reduce"] for step in data_parallel["calls_by_step"]] == [1] + [2] * (STEPS - 1)
    assert "1, 2, 2, 2, a mean of 1.75" in helpers.all_reduces_explained(data_parallel)
    assert "so 2 buckets from the second step on" in helpers.all_reduces_explained(data_parallel)


def test_fully_sharded_sends_about_one_and_a_half_times_the_data(measured):
    explained = helpers.communication_explained(measured["rows"])
    ratio = float(re.search(r"= ([\d.]+) times the data", explained).group(1))
    assert 1.4 < ratio < 1.5, explained  # the root's parameters are gathered once, not twice
    assert helpers.kept_share(measured["rows"]) == pytest.approx(0.5, abs=0.001)


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


def small_random_model(kind):
    """A small random DistilBERT or BERT classifier, built from a config (offline)."""
    from transformers import (BertConfig, BertForSequenceClassification, DistilBertConfig,
                              DistilBertForSequenceClassification)
    torch.manual_seed(0)
    if kind == "distilbert":
        config = DistilBertConfig(vocab_size=64, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                  max_position_embeddings=32, dropout=0.0, attention_dropout=0.0)
        return DistilBertForSequenceClassification(config)
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return BertForSequenceClassification(config)


def groups_and_collectives(kind, steps=2):
    """In each process: shard_model on a small random model; its FSDP groups and collectives per step."""
    from accelerate import PartialState
    from torch.distributed.fsdp import FSDPModule
    PartialState(cpu=True)
    model = sharding.shard_model(small_random_model(kind))
    groups = [name or "(root)" for name, module in model.named_modules() if isinstance(module, FSDPModule)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    collectives = sharding.Collectives()
    with collectives.counting_fsdp():
        for _ in range(steps):
            input_ids = torch.randint(0, 64, (2, 8))
            model(input_ids=input_ids, labels=torch.tensor([0, 1])).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    return groups, {kind: calls / steps for kind, calls in collectives.calls.items()}


def groups_and_collectives_of_each(kinds):
    """In each process: groups_and_collectives of every kind (one start of the processes for all)."""
    return {kind: groups_and_collectives(kind) for kind in kinds}


@pytest.fixture(scope="module")
def small_models_sharded():
    return helpers.run_on_processes(groups_and_collectives_of_each, ("bert", "distilbert"), num_processes=2)


@pytest.mark.parametrize("kind, layers", [
    ("bert", ["bert.embeddings", "bert.encoder.layer.0", "bert.encoder.layer.1"]),
    ("distilbert", ["distilbert.embeddings", "distilbert.transformer.layer.0", "distilbert.transformer.layer.1"]),
])
def test_shard_model_shards_each_layer_of_the_models_the_lessons_suggest(kind, layers, small_models_sharded):
    """DistilBERT names no _no_split_modules (transformers 5.23): shard_model finds its layers all the same, so
    lesson 10's cost section holds for it: 2 all-gathers per layer and step, 1 for the root, 1 reduce-scatter
    per group."""
    groups, per_step = small_models_sharded[kind]
    assert groups == ["(root)", *layers]
    assert per_step == {"all-reduce": 0, "all-gather": 2 * len(layers) + 1, "reduce-scatter": len(layers) + 1}


LESSON_10 = Path(__file__).resolve().parents[1] / "solutions" / "10_sharded_training" / "10_sharded_training.ipynb"


def lesson_cell(cell_id):
    return next("".join(cell["source"]) for cell in json.loads(LESSON_10.read_text())["cells"]
                if cell.get("id") == cell_id)


def recipe_plugin(recipe):
    """The FullyShardedDataParallelPlugin that a recipe of lesson 10 makes, built from the lesson's own text."""
    from accelerate.utils import FullyShardedDataParallelPlugin
    if recipe == "Accelerate":  # the plugin of the code cell, as written there
        written = r"^plugin = (FullyShardedDataParallelPlugin\(.*?\))[ \t]*(?:#[^\n]*)?$"  # a comment may follow
        call = re.search(written, lesson_cell("l10-accelerate-check"), re.M | re.S)[1]
        return eval(call, {"FullyShardedDataParallelPlugin": FullyShardedDataParallelPlugin})  # noqa: S307
    if recipe == "policy alone":
        return FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="transformer_based_wrap")
    if recipe == "Trainer":  # the Trainer builds it from args.fsdp_plugin_args (transformers/trainer.py)
        namespace = {"tempfile": tempfile, "helpers": helpers, "TrainingArguments": TrainingArguments,
                     "print": lambda *args: None}
        exec(lesson_cell("l10-trainer-args"), namespace)  # noqa: S102
        return FullyShardedDataParallelPlugin(**namespace["args"].fsdp_plugin_args)
    # the command line of the markdown: the environment accelerate launch gives the script
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env
    flags = re.search(r"`accelerate launch ([^`]*) train\.py`", lesson_cell("l10-accelerate"))[1].split()
    with helpers.quiet():
        args, _, _ = _validate_launch_command(launch_command_parser().parse_args([*flags, "train.py"]))
    environment = {key: value for key, value in prepare_multi_gpu_env(args).items() if key.startswith("FSDP_")}
    with mock.patch.dict(os.environ, environment):
        return FullyShardedDataParallelPlugin()


def prepare_as_accelerate_does(recipe):
    """In each process: accelerate's fsdp2_prepare_model on the course's model with the recipe's plugin (on the
    CPU, Accelerator(cpu=True) ignores the plugin: its prepare would make DDP); one AdamW step; the groups."""
    from accelerate import PartialState
    from accelerate.utils.fsdp_utils import fsdp2_prepare_model
    from torch.distributed.fsdp import FSDPModule
    state = PartialState(cpu=True)
    stand_in = types.SimpleNamespace(state=types.SimpleNamespace(fsdp_plugin=recipe_plugin(recipe)),
                                     torch_device_mesh=None, parallelism_config=None, device=torch.device("cpu"),
                                     mixed_precision="no", is_main_process=state.is_main_process)
    with helpers.quiet():
        model = helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        model = fsdp2_prepare_model(stand_in, model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(input_ids=torch.randint(5, 100, (2, 8)), labels=torch.tensor([0, 1])).loss.backward()
    optimizer.step()
    return [name or "(root)" for name, module in model.named_modules() if isinstance(module, FSDPModule)]


RECIPES = ("Accelerate", "command line", "Trainer")


def prepare_with_each(recipes):
    """In each process: prepare_as_accelerate_does with every recipe (one start of the processes for all)."""
    return {recipe: prepare_as_accelerate_does(recipe) for recipe in recipes}


@pytest.fixture(scope="module")
def groups_of_each_recipe():
    return helpers.run_on_processes(prepare_with_each, RECIPES, num_processes=2)


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_of_lesson_10_shards_the_course_model_on_two_processes(recipe, groups_of_each_recipe):
    groups = groups_of_each_recipe[recipe]
    assert {"bert.encoder.layer.0", "bert.encoder.layer.1", "(root)"} <= set(groups), groups


def test_the_policy_alone_fails_on_bert_as_lesson_10_says():
    """accelerate 1.15 shards the input embeddings on their own, after BERT's _no_split_modules wrapped
    BertEmbeddings, which holds them: a TypeError (the lesson says so; when this fails, it must change)."""
    with pytest.raises(TypeError, match="Invariant"):
        helpers.run_on_processes(prepare_as_accelerate_does, "policy alone", num_processes=2)
