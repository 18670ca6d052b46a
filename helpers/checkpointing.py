"""Gradient checkpointing: keep fewer activations in the forward pass, recompute them in backward.

In transformers 5.23 the method is `model.activation_checkpointing_enable()`; the slides'
`gradient_checkpointing_enable()` still works as a deprecated alias (it warns). By default it
checkpoints every layer with `torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`.

`train_checkpointed` trains with it on the PyTorch or the Accelerate path; `gradient_difference`
proves that the gradients stay the same; `measure_checkpointing` measures what it buys (peak
memory) and what it costs (the time of a forward and backward pass).
"""
import contextlib
import functools
import statistics

import torch
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .language import message
from .memory import measure_peak_memory
from .timing import ratio_spread, step_times
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

    These saved tensors (the activations, mostly) are what checkpointing makes fewer. Tensors
    that share memory with a parameter of `function` or of a module among `args` (a Linear
    layer keeps its weight for backward) are not counted: autograd keeps only a reference to
    them, and they are in memory anyway. A tensor saved twice counts twice.
    """
    modules = [item for item in (function, *args) if isinstance(item, torch.nn.Module)]
    parameter_memory = {p.untyped_storage().data_ptr() for module in modules for p in module.parameters()}
    sizes = []

    def pack(tensor):
        if tensor.untyped_storage().data_ptr() not in parameter_memory:
            sizes.append(tensor.numel() * tensor.element_size())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        output = function(*args)
    return output, sum(sizes)


def measure_checkpointing(model, dataset, tokenizer, batch_sizes=(16, 64), *, repeats=5, progress=True):
    """Peak memory of a training step and time of a forward and backward pass, with and without checkpointing.

    Returns one row (a dict of plain numbers) per batch size: batch_size, device (its type, where
    the model is: "cuda", "cpu"), tokens (per example,
    after padding), peak_mib / peak_mib_checkpointed (by `measure_peak_memory`: one optimizer
    step with Adam; the weights are not counted), seconds / seconds_checkpointed (median
    forward + backward time, the two settings taking turns for `repeats` rounds), and
    time_ratio, time_ratio_low, time_ratio_high: the median, lowest and highest ratio of the
    checkpointed time to the plain time within a round.
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
            times = step_times(model, batch, repeats=repeats, variants={
                "plain": functools.partial(activation_checkpointing, model, False),
                "checkpointed": functools.partial(activation_checkpointing, model, True)})
            ratio, low, high = ratio_spread(times, "checkpointed", "plain")
            rows.append({"batch_size": batch_size, "device": device.type, "tokens": batch["input_ids"].shape[1],
                         "peak_mib": peaks[False], "peak_mib_checkpointed": peaks[True],
                         "seconds": statistics.median(times["plain"]),
                         "seconds_checkpointed": statistics.median(times["checkpointed"]),
                         "time_ratio": ratio, "time_ratio_low": low, "time_ratio_high": high, "rounds": repeats})
    finally:
        model.train(was_training)
    return rows


def conclusion(rows):
    """What the rows of `measure_checkpointing` say, in words; every verdict comes from their own numbers."""
    lines = []
    for row in rows:
        memory = row["peak_mib_checkpointed"] / row["peak_mib"]
        numbers = dict(device=row["device"], batch_size=row["batch_size"], memory=memory, change=abs(1 - memory),
                       ratio=row["time_ratio"], rounds=row["rounds"], low=row["time_ratio_low"],
                       high=row["time_ratio_high"])
        if round(memory, 2) == 1:
            lines.append(message("batch {batch_size}, on {device}: checkpointing needed the same peak memory "
                                 "({memory:.2f}x) and {ratio:.2f}x the time of a forward and backward pass (median of "
                                 "{rounds} rounds; from {low:.2f}x to {high:.2f}x).", **numbers))
        elif memory < 1:
            lines.append(message("batch {batch_size}, on {device}: checkpointing needed {memory:.2f}x the peak memory "
                                 "(saved {change:.0%}) and {ratio:.2f}x the time of a forward and backward pass "
                                 "(median of {rounds} rounds; from {low:.2f}x to {high:.2f}x).", **numbers))
        else:
            lines.append(message("batch {batch_size}, on {device}: checkpointing needed {memory:.2f}x the peak memory "
                                 "(added {change:.0%}) and {ratio:.2f}x the time of a forward and backward pass "
                                 "(median of {rounds} rounds; from {low:.2f}x to {high:.2f}x).", **numbers))
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        numbers = dict(first=1 - first["peak_mib_checkpointed"] / first["peak_mib"], first_batch=first["batch_size"],
                       last=1 - last["peak_mib_checkpointed"] / last["peak_mib"], last_batch=last["batch_size"])
        first_percent, last_percent = round(100 * numbers["first"]), round(100 * numbers["last"])  # as printed
        if first_percent <= 0 and last_percent <= 0:
            lines.append(message("Checkpointing saved no memory at these batch sizes: {first:.0%} at batch "
                                 "{first_batch}, {last:.0%} at batch {last_batch}.", **numbers))
        elif last_percent > first_percent:
            lines.append(message("The share of memory saved grew with the batch: {first:.0%} at batch "
                                 "{first_batch}, {last:.0%} at batch {last_batch}.", **numbers))
        else:
            lines.append(message("The share of memory saved did not grow with the batch: {first:.0%} at batch "
                                 "{first_batch}, {last:.0%} at batch {last_batch}.", **numbers))
    return "\n".join(lines)


def memory_explanation(row, model):
    """What sets a floor under the memory ratio of a row of `measure_checkpointing` (trained with Adam), in one line.

    Checkpointing makes only the activations fewer. The gradients and Adam's two moments are each as large as the
    weights and all exist at the optimizer step, with or without checkpointing: the peak with it cannot be smaller.
    """
    mib = 2 ** 20
    weights = sum(p.numel() * p.element_size() for p in model.parameters()) / mib
    fixed = 3 * weights
    return message("Checkpointing makes only the activations fewer. The gradients and Adam's two moments, {fixed:.1f} "
                   "MiB (3 x the {weights:.1f} MiB of weights), stay as they are, so at batch {batch_size} the ratio "
                   "cannot fall below {floor:.2f} x. Only the other {rest:.1f} MiB of the {peak:.1f} MiB peak without "
                   "checkpointing (activations and temporaries) can shrink, and they grow with the batch.",
                   fixed=fixed, weights=weights, batch_size=row["batch_size"], floor=fixed / row["peak_mib"],
                   rest=row["peak_mib"] - fixed, peak=row["peak_mib"])
