"""Gradient checkpointing (helpers.checkpointing): the course's claims about it.

It gives the same gradients, with dropout on too (checkpoint replays the random state); training
with it gives the same losses as without; it lowers the peak memory of a large batch; and a
model without working checkpointing (here: one that does not replay dropout) is caught.
"""
import pytest
import torch

import helpers
from helpers import checkpointing
from helpers.exercises import model_with_broken_checkpointing, tiny_batch, tiny_layers


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
        [row] = checkpointing.measure_checkpointing(model, small_data["train"], tokenizer, (32,),
                                                    repeats=1, progress=False)
    assert row["peak_mib_checkpointed"] < 0.8 * row["peak_mib"], row
    assert row["seconds"] > 0 and row["seconds_checkpointed"] > 0
    assert row["device"] == "cpu"
    assert set(row) == {"batch_size", "device", "tokens", "peak_mib", "peak_mib_checkpointed", "seconds", "seconds_checkpointed",
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


def checkpointing_rows(*peaks, time_ratio=1.3, device="cpu"):
    """measure_checkpointing's rows for batch 16, 64, ...: `peaks` are (without, with) in MiB."""
    return [{"batch_size": 16 * 4 ** index, "device": device, "peak_mib": plain, "peak_mib_checkpointed": kept,
             "time_ratio": time_ratio, "time_ratio_low": time_ratio - 0.2, "time_ratio_high": time_ratio + 0.2,
             "rounds": 5} for index, (plain, kept) in enumerate(peaks)]


def test_conclusion_follows_the_numbers():
    text = checkpointing.conclusion(checkpointing_rows((10.0, 9.0), (40.0, 20.0)))
    assert ("batch 16, on cpu: checkpointing needed 0.90x the peak memory (saved 10%) and 1.30x the time of a "
            "forward and backward pass (median of 5 rounds; from 1.10x to 1.50x)") in text
    assert "grew with the batch: 10% at batch 16, 50% at batch 64" in text
    assert "did not grow with the batch" in checkpointing.conclusion(checkpointing_rows((10.0, 9.0), (40.0, 39.0)))


def test_conclusion_says_so_when_the_numbers_point_the_other_way():
    """No outcome is fixed text: more memory, the same memory, no saving at all, a faster pass, on cuda."""
    added = checkpointing.conclusion(checkpointing_rows((10.0, 11.0), (40.0, 44.0), time_ratio=0.8, device="cuda"))
    assert "batch 16, on cuda: checkpointing needed 1.10x the peak memory (added 10%) and 0.80x the time" in added
    assert "saved no memory at these batch sizes: -10% at batch 16, -10% at batch 64" in added
    assert "grew" not in added and "(saved" not in added
    same = checkpointing.conclusion(checkpointing_rows((10.0, 10.0), (40.0, 40.02)))
    assert "needed the same peak memory (1.00x)" in same and "added" not in same and "saved 0%" not in same
    # 10.2% and 10.4% both print as 10%: "grew" would contradict the printed numbers
    assert "did not grow with the batch: 10% at batch 16, 10% at batch 64" in checkpointing.conclusion(
        checkpointing_rows((100.0, 89.8), (100.0, 89.6)))


def test_bad_path_is_named():
    with pytest.raises(ValueError, match="path='jax'"):
        checkpointing.train_checkpointed(None, None, path="jax")
