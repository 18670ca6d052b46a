"""The learning rate and the effective batch (lesson 3): a small measurement, and what it says.

With the same data, an effective batch k times larger gives k times fewer optimizer steps per
epoch, and each step's gradient is the mean over k times more examples (less noisy, not larger).
`compare_batch_sizes` trains fresh copies of the model for the same epochs on the same data, one
row per (effective batch, learning rate), and measures the steps, how far the weights moved from
their start and the validation loss; `batch_size_conclusion` says what those numbers show, and
nothing that they do not.
"""
from dataclasses import dataclass

import torch

from .data import make_dataloader
from .language import message
from .training import default_device, evaluate, parameters_of, train_pytorch


def distance_moved(start, model):
    """The norm of (weights now - weights at the start), over all parameters together."""
    now = parameters_of(model)
    return torch.sqrt(sum(((now[name] - value) ** 2).sum() for name, value in start.items())).item()


@dataclass(frozen=True)
class BatchComparison:
    """How long, and on how much data, `compare_batch_sizes` trains and evaluates each run."""
    epochs: int = 1
    train_examples: int = 96       # the first ones of the training data (or all, where there are fewer)
    validation_examples: int = 64  # the same for the validation data


def compare_batch_sizes(make_model, train_dataset, validation_dataset, tokenizer, runs, *, device=None,
                        **comparison):
    """Train a fresh model (`make_model()`) per run on the same data; `runs` is [(batch_size, learning_rate)].

    comparison: the keywords of `BatchComparison` (epochs, train_examples, validation_examples).
    Returns one row per run: batch_size, learning_rate, steps (optimizer steps), distance (norm of the
    change of the weights) and validation_loss. To stay fast, it trains on the first `train_examples`
    examples and evaluates on the first `validation_examples` (or all, where there are fewer).
    """
    comparison = BatchComparison(**comparison)
    device = device or default_device()
    train_dataset = train_dataset.select(range(min(comparison.train_examples, len(train_dataset))))
    validation_dataset = validation_dataset.select(
        range(min(comparison.validation_examples, len(validation_dataset))))
    validation = make_dataloader(validation_dataset, tokenizer, 64)
    rows = []
    for batch_size, learning_rate in runs:
        model = make_model()
        start = parameters_of(model)
        history = train_pytorch(model, make_dataloader(train_dataset, tokenizer, batch_size),
                                epochs=comparison.epochs, learning_rate=learning_rate, device=device, progress=False)
        rows.append({"batch_size": batch_size, "learning_rate": learning_rate, "steps": history.optimizer_steps,
                     "distance": distance_moved(start, model),
                     "validation_loss": evaluate(model, validation)["loss"]})
    return rows


def batch_size_table(rows):
    """One line per run: the effective batch, the learning rate, steps, distance moved, validation loss."""
    return "\n".join(message("effective batch {batch_size:3d}, learning rate {learning_rate:.1e}: {steps:3d} steps, "
                             "weights moved {distance:6.2f}, validation loss {validation_loss:.3f}", **row)
                     for row in rows)


def batch_size_conclusion(rows):
    """What the rows of `compare_batch_sizes` show: the first row is the small batch; the second the
    large batch at the same learning rate; the third (if any) the large batch at a larger learning rate."""
    small, same = rows[0], rows[1]
    lines = [message("With a {k:g} times larger batch at the same learning rate: {steps} steps instead of "
                     "{small_steps}; the weights moved {moved:.2f} times as far; the validation loss is {loss:.3f} "
                     "against {small_loss:.3f} ({direction}).",
                     k=same["batch_size"] / small["batch_size"], steps=same["steps"], small_steps=small["steps"],
                     moved=same["distance"] / small["distance"], loss=same["validation_loss"],
                     small_loss=small["validation_loss"],
                     direction=message("higher") if same["validation_loss"] > small["validation_loss"]
                     else message("lower or equal"))]
    if len(rows) > 2:
        scaled = rows[2]
        closer = (abs(scaled["validation_loss"] - small["validation_loss"])
                  < abs(same["validation_loss"] - small["validation_loss"]))
        lines.append(message(
            "With {factor:g} times the learning rate, the large batch's weights moved {moved:.2f} times as far as the "
            "small batch's, and its validation loss, {loss:.3f}, is {which} the small batch's than at the same "
            "learning rate.", factor=scaled["learning_rate"] / same["learning_rate"],
            moved=scaled["distance"] / small["distance"], loss=scaled["validation_loss"],
            which=message("closer to") if closer else message("not closer to")))
    lines.append(message("One run each, on this data and model: a measurement, not a rule."))
    return "\n".join(lines)
