"""Mixed precision: compute the forward pass in 16 bits, keep the weights and the update in 32.

`torch.autocast(device_type, dtype)` runs the operations that gain from it (matrix products)
in `dtype` and keeps the sensitive ones (softmax, losses, sums) in float32; the weights stay
float32. bfloat16 has float32's range, so it needs no loss scaling; float16 has a small range,
so small gradients would round to 0: a `GradScaler` multiplies the loss before backward and
divides the gradients again before the optimizer steps.

`train_mixed_precision` is the basic loop with autocast (and a GradScaler for float16);
`measure_mixed_precision` measures step time and peak memory against float32.
"""
import functools
import time

import torch
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .memory import measure_peak_memory
from .timing import step_seconds
from .training import History, _setup

PRECISIONS = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def dtype_of(precision):
    """torch.bfloat16 for "bfloat16", and so on; a clear error for anything else."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: use one of {sorted(PRECISIONS)}")
    return PRECISIONS[precision]


def autocast(device, precision):
    """torch.autocast for `precision` on `device`; for "float32" a context that changes nothing."""
    device_type = torch.device(device).type
    return torch.autocast(device_type, dtype=dtype_of(precision), enabled=precision != "float32")


def training_step(model, batch, optimizer, scaler, device, precision):
    """One optimizer step with the forward pass under autocast; returns the loss (a float).

    `scaler` is a torch.amp.GradScaler; a disabled one (bfloat16, float32) changes nothing.
    """
    batch = {key: value.to(device) for key, value in batch.items()}
    with autocast(device, precision):
        loss = model(**batch).loss
    scaler.scale(loss).backward()    # loss x scale: small float16 gradients do not round to 0
    scaler.step(optimizer)           # divides the gradients by the scale, then steps (skips on inf/nan)
    scaler.update()                  # smaller scale after an overflow, larger after many good steps
    optimizer.zero_grad()
    return loss.item()


def train_mixed_precision(model, dataloader, *, precision="bfloat16", epochs=1, learning_rate=5e-4,
                          optimizer=None, device=None, progress=True):
    """The basic PyTorch loop with the forward pass under autocast; float16 adds a GradScaler.

    precision="float32" is the plain loop of `train_pytorch`. Returns a History; its `scales`
    holds the GradScaler's scale before each step (float16 only).
    """
    dtype_of(precision)
    optimizer, lr_scheduler, _ = _setup(model, dataloader, epochs, learning_rate, 1, optimizer)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model.to(device).train()
    # only float16 needs loss scaling; a disabled scaler passes everything through unchanged
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "float16")
    history, start = History(), time.perf_counter()
    total = len(dataloader) * epochs
    with tqdm(total=total, desc=f"train_mixed_precision ({precision})", unit="step", disable=not progress) as bar:
        for epoch in range(epochs):
            for batch in dataloader:
                history.learning_rate.append(lr_scheduler.get_last_lr()[0])
                if scaler.is_enabled():
                    history.scales.append(scaler.get_scale())
                history.loss.append(training_step(model, batch, optimizer, scaler, device, precision))
                lr_scheduler.step()
                bar.update()
                bar.set_postfix(loss=f"{history.loss[-1]:.3f}")
    history.seconds = time.perf_counter() - start
    return history


def measure_mixed_precision(model, dataset, tokenizer, batch_size=32, precisions=("float32", "bfloat16"),
                            *, repeats=3, progress=True):
    """Step time and peak memory of a training step in each precision.

    Returns one row per precision (a dict of plain numbers): precision, seconds (median forward
    + backward time; the precisions take turns), peak_mib (one optimizer step with Adam, by
    `measure_peak_memory`; the weights are not counted). The ratio to report is each row's
    seconds and peak_mib over the float32 row's.
    """
    require_positive_int("batch_size", batch_size)
    require_positive_int("repeats", repeats)
    for precision in precisions:
        dtype_of(precision)
    device = next(model.parameters()).device
    was_training = model.training
    model.train()
    try:
        batch = next(iter(make_dataloader(dataset, tokenizer, batch_size)))
        batch = {key: value.to(device) for key, value in batch.items()}
        peaks = {precision: measure_peak_memory(model, dataset, tokenizer, batch_size, autocast_dtype=dtype_of(precision))
                 for precision in tqdm(precisions, desc="measure_mixed_precision", disable=not progress)}
        seconds = step_seconds(model, batch, repeats=repeats, variants={
            precision: functools.partial(autocast, device, precision) for precision in precisions})
    finally:
        model.train(was_training)
    return [{"precision": precision, "seconds": seconds[precision], "peak_mib": peaks[precision]}
            for precision in precisions]
