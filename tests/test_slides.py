"""The loops the lessons show (helpers.slides) are code that trains, and they agree with each other.

With full accumulation windows, dropout off and SGD, every slide loop ends with the parameters of
the plain loop at batch B: the Accelerator loop at B, both accumulation loops at B / 2 with 2
micro-batches per optimizer step, local SGD (one process: nothing to average), and the
checkpointing loop, also when it is interrupted and resumed from its saved state.
"""
import pytest
import torch

import helpers
from helpers import slides
from helpers.exercises import fresh_accelerator_state

BATCH = 8
EXAMPLES = 32  # a multiple of BATCH: every accumulation window is full, as the slides' loop assumes
LEARNING_RATE = 0.05  # larger rates amplify float rounding (micro-batches pad to other lengths)


@pytest.fixture(scope="module")
def dataset(small_data):
    return small_data["train"].select(range(EXAMPLES))


def trained_with(loop, dataset, tokenizer, batch_size, optimizer_steps, **arguments):
    with helpers.quiet():
        model = helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    scheduler = helpers.make_scheduler(optimizer, optimizer_steps)
    loader = helpers.make_dataloader(dataset, tokenizer, batch_size)
    slides.LOOPS[loop](model, optimizer, scheduler, loader, **arguments)
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def test_every_slide_loop_trains_to_the_large_batch_parameters(dataset, tokenizer, tmp_path):
    steps = EXAMPLES // BATCH
    cpu = {"device": torch.device("cpu")}
    expected = trained_with("pytorch", dataset, tokenizer, BATCH, steps, **cpu)
    with helpers.quiet():
        initial = dict(helpers.load_model().named_parameters())
    assert max((expected[n] - initial[n]).abs().max().item() for n in expected) > 1e-3, "nothing trained"
    others = {
        "accelerator": trained_with("accelerator", dataset, tokenizer, BATCH, steps),
        "pytorch_accumulation": trained_with("pytorch_accumulation", dataset, tokenizer, BATCH // 2, steps, **cpu),
        "accelerator_accumulation": trained_with("accelerator_accumulation", dataset, tokenizer, BATCH // 2, steps),
        "accelerator_local_sgd": trained_with("accelerator_local_sgd", dataset, tokenizer, BATCH, steps),
        "accelerator_checkpointing": trained_with("accelerator_checkpointing", dataset, tokenizer, BATCH, steps,
                                                  checkpoint=str(tmp_path / "uninterrupted")),
        "accelerator_checkpointing, resumed": resumed(dataset, tokenizer, steps, tmp_path / "interrupted"),
        "accelerator_activation_checkpointing": trained_with("accelerator_activation_checkpointing", dataset,
                                                             tokenizer, BATCH, steps),
    }
    for loop, parameters in others.items():
        for name in expected:
            assert torch.allclose(expected[name], parameters[name], rtol=1e-4, atol=1e-6), (
                f"slides.{loop}: {name} differs from the plain loop at batch {BATCH} by "
                f"{(expected[name] - parameters[name]).abs().max().item():.2e}")


def resumed(dataset, tokenizer, steps, checkpoint, done=2):
    """The checkpointing loop stopped after `done` batches (it saw only those), then a new process's
    worth of objects resumed from the saved state: the rest of the epoch."""
    trained_with("accelerator_checkpointing", dataset.select(range(done * BATCH)), tokenizer, BATCH, steps,
                 checkpoint=str(checkpoint))
    return trained_with("accelerator_checkpointing", dataset, tokenizer, BATCH, steps, checkpoint=str(checkpoint),
                        resume=True, done_in_epoch=done)


def test_the_checkpointing_loop_resumes_at_an_epoch_boundary_too(dataset, tokenizer, tmp_path):
    """A run that saved its state at the end of an epoch (0 batches done in the next one) loads it
    too: the second half of the data, resumed, ends where the plain loop over all of it ends."""
    steps, half = EXAMPLES // BATCH, EXAMPLES // 2
    expected = trained_with("pytorch", dataset, tokenizer, BATCH, steps, device=torch.device("cpu"))
    checkpoint = str(tmp_path / "epoch_boundary")
    trained_with("accelerator_checkpointing", dataset.select(range(half)), tokenizer, BATCH, steps,
                 checkpoint=checkpoint)
    resumed = trained_with("accelerator_checkpointing", dataset.select(range(half, EXAMPLES)), tokenizer, BATCH,
                           steps, checkpoint=checkpoint, resume=True, done_in_epoch=0)
    for name in expected:
        assert torch.allclose(expected[name], resumed[name], rtol=1e-4, atol=1e-6), name


def test_source_is_the_body_of_the_function():
    text = slides.source("accelerator")
    assert text.startswith("accelerator = Accelerator(device_placement=True)\n")
    assert "def " not in text and "accelerator.backward(loss)" in text


def test_changed_lines_mark_what_the_accelerator_changes():
    lines = slides.changed_lines("pytorch", "accelerator").splitlines()
    assert "- " + "    loss.backward()" in lines and "+ " + "    accelerator.backward(loss)" in lines
    assert "  " + "    optimizer.step()" in lines


@pytest.mark.parametrize("loop", ["pytorch_autocast", "accelerator_mixed_precision", "pytorch_grad_scaler"])
def test_mixed_precision_loops_train_close_to_float32(dataset, tokenizer, loop):
    """bfloat16 keeps 8 bits of mantissa: close to float32, not equal (float16 with its scaler: closer)."""
    cpu = {"device": torch.device("cpu")}
    steps = EXAMPLES // BATCH
    expected = trained_with("pytorch", dataset, tokenizer, BATCH, steps, **cpu)
    fresh_accelerator_state()  # an Accelerator's precision is fixed once per process, unless reset
    try:
        mixed = trained_with(loop, dataset, tokenizer, BATCH, steps, **(cpu if loop.startswith("pytorch") else {}))
    finally:
        fresh_accelerator_state()
    with helpers.quiet():
        initial = dict(helpers.load_model().named_parameters())
    moved = max((expected[n] - initial[n]).abs().max().item() for n in expected)
    differs = max((expected[n] - mixed[n]).abs().max().item() for n in expected)
    assert 0 < differs < 0.1 * moved, f"slides.{loop}: {differs:.2e} from float32 after moving {moved:.2e}"
