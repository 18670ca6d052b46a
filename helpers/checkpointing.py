"""Gradient checkpointing: keep fewer activations in the forward pass, recompute them in backward.

In transformers 5.23 the method is `model.activation_checkpointing_enable()`; the slides'
`gradient_checkpointing_enable()` still works as a deprecated alias (it warns). By default it
checkpoints every layer with `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`.

`train_checkpointed` trains with it on the PyTorch or the Accelerate path; `gradient_difference`
proves that the gradients stay the same; `measure_checkpointing` measures what it buys (peak
memory) and what it costs (step time).
"""
import contextlib
import functools

import torch
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .memory import measure_peak_memory
from .timing import step_seconds
from .training import train_accelerate, train_pytorch

PATHS = {"pytorch": train_pytorch, "accelerate": train_accelerate}


@contextlib.contextmanager
def activation_checkpointing(model, enabled=True):
    """Inside this block the model recomputes each layer's activations in the backward pass
    (enabled=True) or keeps them (enabled=False); afterwards it is as it was."""
    was_enabled = model.is_activation_checkpointing
    _switch(model, enabled)
    try:
        yield model
    finally:
        _switch(model, was_enabled)


def _switch(model, enabled):
    if enabled:
        model.activation_checkpointing_enable()
    else:
        model.activation_checkpointing_disable()


def train_checkpointed(model, dataloader, *, path="pytorch", **training):
    """Train with activation checkpointing on, with `train_pytorch` or `train_accelerate`.

    `training` goes to that function (epochs, learning_rate, gradient_accumulation_steps, ...);
    returns what it returns. Checkpointing is switched off again afterwards.
    """
    if path not in PATHS:
        raise ValueError(f"train_checkpointed(path={path!r}): use one of {sorted(PATHS)}")
    with activation_checkpointing(model):
        return PATHS[path](model, dataloader, **training)


def gradients(model, batch, *, checkpointing, seed=0):
    """The gradient of every parameter for one batch (copies), with checkpointing on or off.

    The random generator starts from `seed`, so dropout drops the same units in both passes.
    """
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    with activation_checkpointing(model, checkpointing):
        model(**batch).loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def gradient_difference(model, batch, seed=0):
    """Largest absolute difference between the gradients with and without checkpointing.

    Works with dropout on: checkpoint saves the random state and replays it when it recomputes
    a layer, so the recomputed layer drops the same units as the first forward pass did.
    """
    if not model.training:
        raise ValueError("gradient_difference: call model.train() first; checkpointing acts only in training")
    plain = gradients(model, batch, checkpointing=False, seed=seed)
    checkpointed = gradients(model, batch, checkpointing=True, seed=seed)
    if plain.keys() != checkpointed.keys():
        raise AssertionError(f"only one pass gave gradients to {sorted(plain.keys() ^ checkpointed.keys())}")
    return max((plain[name] - checkpointed[name]).abs().max().item() for name in plain)


def saved_activation_bytes(function, *args):
    """(output, bytes): run `function(*args)` and count the bytes autograd keeps for backward.

    These saved tensors (the activations, mostly) are what checkpointing makes fewer.
    A tensor saved twice counts twice; parameters saved by a layer count too.
    """
    sizes = []

    def pack(tensor):
        sizes.append(tensor.numel() * tensor.element_size())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        output = function(*args)
    return output, sum(sizes)


def measure_checkpointing(model, dataset, tokenizer, batch_sizes=(16, 64), *, repeats=3, progress=True):
    """Peak memory and step time of a training step, with and without checkpointing.

    Returns one row (a dict of plain numbers) per batch size: batch_size, tokens (per example,
    after padding), peak_mib / peak_mib_checkpointed (by `measure_peak_memory`: one optimizer
    step with Adam; the weights are not counted) and seconds / seconds_checkpointed (median
    forward + backward time, the two settings taking turns). checkpointed / plain is the ratio
    to report: below 1 for memory (what it buys), above 1 for time (what it costs).
    """
    require_positive_int("repeats", repeats)
    device = next(model.parameters()).device
    was_training = model.training
    model.train()
    rows = []
    try:
        for batch_size in tqdm(batch_sizes, desc="measure_checkpointing", disable=not progress):
            require_positive_int("batch_size", batch_size)
            batch = next(iter(make_dataloader(dataset, tokenizer, batch_size)))
            batch = {key: value.to(device) for key, value in batch.items()}
            peaks = {}
            for checkpointing in (False, True):
                with activation_checkpointing(model, checkpointing):
                    peaks[checkpointing] = measure_peak_memory(model, dataset, tokenizer, batch_size)
            seconds = step_seconds(model, batch, repeats=repeats, variants={
                "plain": functools.partial(activation_checkpointing, model, False),
                "checkpointed": functools.partial(activation_checkpointing, model, True)})
            rows.append({"batch_size": batch_size, "tokens": batch["input_ids"].shape[1],
                         "peak_mib": peaks[False], "peak_mib_checkpointed": peaks[True],
                         "seconds": seconds["plain"], "seconds_checkpointed": seconds["checkpointed"]})
    finally:
        model.train(was_training)
    return rows
