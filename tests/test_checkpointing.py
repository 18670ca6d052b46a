"""Gradient checkpointing (helpers.checkpointing): the course's claims about it.

It gives the same gradients, with dropout on too (checkpoint replays the random state); training
with it gives the same losses as without; it lowers the peak memory of a large batch; and a
model without working checkpointing (here: one that does not replay dropout) is caught.
"""
import pytest
import torch

import helpers
from helpers import checkpointing
from helpers.exercises_efficiency import model_with_broken_checkpointing, tiny_batch, tiny_layers


@pytest.fixture(scope="module")
def batch():
    return tiny_batch(16)


def test_gradients_are_the_same_with_dropout_on(batch):
    with helpers.quiet():
        model = helpers.load_model().train()   # dropout 0.1
    assert checkpointing.gradient_difference(model, batch) == 0.0
    assert not model.is_activation_checkpointing, "switched off again afterwards"


def test_a_checkpoint_that_does_not_replay_dropout_changes_the_gradients(batch):
    with helpers.quiet():
        difference = checkpointing.gradient_difference(model_with_broken_checkpointing(), batch)
    assert difference > 1e-4, difference


def test_checkpointing_is_on_in_the_checkpointed_pass(batch):
    with helpers.quiet():
        model = helpers.load_model().train()
    calls = []
    with checkpointing.activation_checkpointing(model):
        func = model.bert.encoder.layer[0]._gradient_checkpointing_func

        def counting(*args, **kwargs):
            calls.append(1)
            return func(*args, **kwargs)
        for layer in model.bert.encoder.layer:
            layer._gradient_checkpointing_func = counting
        with helpers.quiet():
            model(**batch).loss.backward()
    assert len(calls) == len(model.bert.encoder.layer), calls


def test_training_with_checkpointing_gives_the_same_losses():
    with helpers.quiet():
        data = helpers.load_data(sizes={"train": 32, "validation": 8, "test": 8})
        tokenizer = helpers.load_tokenizer()
        loader = helpers.make_dataloader(helpers.tokenize_data(data, tokenizer)["train"], tokenizer, 8)
        models = [helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0) for _ in range(2)]
        plain = helpers.train_pytorch(models[0], loader, progress=False, device="cpu")
        checkpointed = checkpointing.train_checkpointed(models[1], loader, progress=False, device="cpu")
    assert plain.optimizer_steps == checkpointed.optimizer_steps == 4
    assert max(abs(a - b) for a, b in zip(plain.loss, checkpointed.loss)) < 1e-5
    assert not models[1].is_activation_checkpointing


def test_checkpointing_lowers_the_peak_memory_of_a_large_batch(small_data, tokenizer):
    with helpers.quiet():
        model = helpers.load_model()
        [row] = checkpointing.measure_checkpointing(model, small_data["train"], tokenizer, (48,),
                                                    repeats=1, progress=False)
    assert row["peak_mib_checkpointed"] < 0.8 * row["peak_mib"], row
    assert row["seconds"] > 0 and row["seconds_checkpointed"] > 0
    assert set(row) == {"batch_size", "tokens", "peak_mib", "peak_mib_checkpointed", "seconds", "seconds_checkpointed",
                        "time_ratio", "time_ratio_low", "time_ratio_high", "rounds"}
    assert row["time_ratio_low"] <= row["time_ratio"] <= row["time_ratio_high"]


def test_saved_activation_bytes_see_what_checkpoint_keeps():
    from torch.utils.checkpoint import checkpoint
    layer = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))
    x = torch.randn(32, 16)
    _, plain = checkpointing.saved_activation_bytes(layer, x)
    _, kept = checkpointing.saved_activation_bytes(lambda x: checkpoint(layer, x, use_reentrant=False), x)
    assert kept < plain / 4, (kept, plain)


def test_saved_activation_bytes_leaves_out_the_weights_autograd_keeps():
    """Lesson 5's stack: 4 layers of width 32, 64 examples. Each Linear keeps its weight (by
    reference, not counted); the activations are 288 KiB, with checkpointing 32 KiB (the inputs)."""
    from torch.utils.checkpoint import checkpoint
    layers = tiny_layers(num_layers=4, width=32)
    x = torch.randn(64, 32)

    def forward(layers, hidden, wrap=lambda layer, hidden: layer(hidden)):
        for layer in layers:
            hidden = wrap(layer, hidden)
        return hidden

    _, plain = checkpointing.saved_activation_bytes(forward, layers, x)
    _, kept = checkpointing.saved_activation_bytes(
        lambda layers, x: forward(layers, x, lambda layer, hidden: checkpoint(layer, hidden, use_reentrant=False)),
        layers, x)
    assert (plain, kept) == (288 * 1024, 4 * 64 * 32 * 4)


def test_conclusion_follows_the_numbers():
    rows = [{"batch_size": 16, "peak_mib": 10.0, "peak_mib_checkpointed": 9.0, "time_ratio": 1.3,
             "time_ratio_low": 1.1, "time_ratio_high": 1.5, "rounds": 5},
            {"batch_size": 64, "peak_mib": 40.0, "peak_mib_checkpointed": 20.0, "time_ratio": 1.25,
             "time_ratio_low": 1.2, "time_ratio_high": 1.4, "rounds": 5}]
    text = checkpointing.conclusion(rows)
    assert "batch 16: checkpointing needed 0.90x the peak memory (saved 10%) and 1.30x the time" in text
    assert "from 1.10x to 1.50x" in text and "grew with the batch: 10% at batch 16, 50% at batch 64" in text
    rows[1]["peak_mib_checkpointed"] = 39.0
    assert "did not grow with the batch" in checkpointing.conclusion(rows)


def test_bad_path_is_named():
    with pytest.raises(ValueError, match="path='jax'"):
        checkpointing.train_checkpointed(None, None, path="jax")
