"""Mixed precision: compute in 16 bits where it pays, keep the weights and the update in 32.

`torch.autocast(device_type, dtype)` casts the inputs of the operations on its list for that
device to `dtype` (matrix products on every device), and keeps a few others in float32; the
weights, their gradients and the optimizer's state stay float32. The lists differ per device:
on the CPU with bfloat16, softmax, layer_norm and sums of a bfloat16 tensor stay bfloat16 and
only the loss (cross_entropy) comes out float32; on CUDA softmax, layer_norm and sums run in
float32 (torch/testing/_internal/autocast_test_lists.py shows both lists; tests/test_claims.py
checks the CPU's).
bfloat16 has float32's range, so it needs no loss scaling; float16 has a small range, so tiny
gradients would lose their digits or become 0: a `GradScaler` multiplies the loss before
backward and divides the gradients again before the optimizer steps.

`train_mixed_precision` is the basic loop with autocast (and a GradScaler for float16);
`measure_mixed_precision` measures step time and peak memory against float32, and `conclusion`
says in words what those numbers mean on this machine.
"""
import functools
import statistics
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .language import message
from .memory import measure_peak_memory
from .timing import ratio_spread, step_times
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
                            *, repeats=5, progress=True):
    """Step time and peak memory of a training step in each precision.

    Returns one row per precision (a dict of plain numbers): precision; seconds (median forward
    + backward time; the precisions take turns, `repeats` rounds); time_ratio, time_ratio_low and
    time_ratio_high (the median, lowest and highest ratio to float32's time within a round);
    rounds; peak_mib (one optimizer step with Adam, by `measure_peak_memory`; the weights are
    not counted). The first precision is the baseline (float32).
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
        times = step_times(model, batch, repeats=repeats, variants={
            precision: functools.partial(autocast, device, precision) for precision in precisions})
    finally:
        model.train(was_training)
    rows = []
    for precision in precisions:
        ratio, low, high = ratio_spread(times, precision, precisions[0])
        rows.append({"precision": precision, "seconds": statistics.median(times[precision]), "time_ratio": ratio,
                     "time_ratio_low": low, "time_ratio_high": high, "rounds": repeats, "peak_mib": peaks[precision]})
    return rows


# the /proc/cpuinfo flags of instructions that compute in bfloat16 (x86: AVX512-BF16, AMX; Arm: bf16)
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


def cpu_bf16_instructions(cpuinfo="/proc/cpuinfo"):
    """The bfloat16 instruction flags this CPU reports (a sorted list), or None where there is
    no /proc/cpuinfo to read (not Linux)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return None
    flags = set()
    for line in text.splitlines():
        if line.lower().startswith(("flags", "features")):
            flags.update(line.split(":", 1)[1].split())
    return sorted(flags & set(BF16_FLAGS))


def conclusion(rows, device, bf16_instructions=None):
    """What the rows of `measure_mixed_precision` say, in words, from their own numbers.

    `device` is where they were measured; on a CPU, `bf16_instructions` (default: read from
    /proc/cpuinfo by `cpu_bf16_instructions`) tells whether it computes in bfloat16 natively.
    """
    device = torch.device(device)
    lines = []
    for row in rows[1:]:
        ratio = row["time_ratio"]
        numbers = dict(precision=row["precision"], baseline=rows[0]["precision"], ratio=ratio, rounds=row["rounds"],
                       low=row["time_ratio_low"], high=row["time_ratio_high"],
                       memory=row["peak_mib"] / rows[0]["peak_mib"])
        if 0.9 <= ratio <= 1.1:
            lines.append(message("On this machine a {precision} step took about as long as a {baseline} step "
                                 "({ratio:.2f}x; the median of {rounds} rounds, from {low:.2f}x to {high:.2f}x), "
                                 "and needed {memory:.2f}x the peak memory.", **numbers))
        elif ratio < 1:
            lines.append(message("On this machine a {precision} step took {ratio:.2f}x as long as a {baseline} step "
                                 "(faster; the median of {rounds} rounds, from {low:.2f}x to {high:.2f}x), "
                                 "and needed {memory:.2f}x the peak memory.", **numbers))
        else:
            lines.append(message("On this machine a {precision} step took {ratio:.2f}x as long as a {baseline} step "
                                 "(slower; the median of {rounds} rounds, from {low:.2f}x to {high:.2f}x), "
                                 "and needed {memory:.2f}x the peak memory.", **numbers))
    if device.type != "cpu":
        lines.append(message("Measured on {device}: GPUs with tensor cores compute in 16 bits much faster than in 32.",
                             device=device.type))
        return "\n".join(lines)
    flags = cpu_bf16_instructions() if bf16_instructions is None else bf16_instructions
    if flags:
        lines.append(message("This CPU has bfloat16 instructions ({flags}): its bfloat16 matrix products can be "
                             "faster than float32 ones, when the matrices are large enough to pay for autocast's "
                             "conversions.", flags=", ".join(flags)))
    elif flags == []:
        lines.append(message("This CPU has no bfloat16 instructions (no avx512_bf16 or amx_bf16 in /proc/cpuinfo): "
                             "it has no fast bfloat16 matrix product, so bfloat16 is slow here. On a GPU with tensor "
                             "cores, or a CPU with AMX, bfloat16 is usually faster than float32."))
    else:
        lines.append(message("Whether this CPU has bfloat16 instructions is unknown (no /proc/cpuinfo); without "
                             "them bfloat16 is slow on a CPU."))
    return "\n".join(lines)
