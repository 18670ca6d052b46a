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
`measure_mixed_precision` measures the time of a forward and backward pass and the peak memory of a
training step against float32, and `conclusion` says in words what those numbers mean on this device.
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
from .training import History, default_device, setup_training

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
    optimizer, lr_scheduler, _ = setup_training(model, dataloader, epochs, learning_rate, optimizer=optimizer)
    device = torch.device(device or default_device())
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
    """Time of a forward and backward pass, and peak memory of a training step, in each precision.

    Returns one row per precision (a dict of plain numbers): precision; device (its type, where the
    model is: "cuda", "cpu"); seconds (median forward
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
        rows.append({"precision": precision, "device": device.type, "seconds": statistics.median(times[precision]),
                     "time_ratio": ratio, "time_ratio_low": low, "time_ratio_high": high, "rounds": repeats,
                     "peak_mib": peaks[precision]})
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


# a 16-bit pass that takes less than this share of float32's time paid off; up to 1.1x is "about as long"
PAID_OFF = 0.9
SLOWER = 1.1


def conclusion(rows, device=None, bf16_instructions=None, gpu_bf16=None, hardware=True):
    """What the rows of `measure_mixed_precision` say, in words; every verdict comes from a measured ratio.

    `device` is where the rows were measured (default: their own "device"). When a precision was
    measured slower, the device's hardware may explain it: a CPU's bfloat16 instructions
    (`bf16_instructions`, default: read from /proc/cpuinfo by `cpu_bf16_instructions`), or whether
    a GPU computes bfloat16 natively (`gpu_bf16`, default: torch.cuda.is_bf16_supported without
    emulation: compute capability 8.0, Ampere, or newer). `hardware=False` leaves that out, where
    `speed_explanation` has said it already.
    """
    device = torch.device(device or rows[0]["device"])
    lines = []
    for row in rows[1:]:
        ratio = row["time_ratio"]
        numbers = dict(device=device.type, precision=row["precision"], baseline=rows[0]["precision"], ratio=ratio,
                       rounds=row["rounds"], low=row["time_ratio_low"], high=row["time_ratio_high"],
                       memory=row["peak_mib"] / rows[0]["peak_mib"])
        if PAID_OFF <= ratio <= SLOWER:
            lines.append(message("Measured on {device}: a forward and backward pass in {precision} took about as long "
                                 "as in {baseline} ({ratio:.2f}x; the median of {rounds} rounds, from {low:.2f}x to "
                                 "{high:.2f}x), and a training step needed {memory:.2f}x the peak memory.", **numbers))
        elif ratio < 1:
            lines.append(message("Measured on {device}: a forward and backward pass in {precision} took {ratio:.2f}x "
                                 "as long as in {baseline} (faster; the median of {rounds} rounds, from {low:.2f}x to "
                                 "{high:.2f}x), and a training step needed {memory:.2f}x the peak memory.", **numbers))
        else:
            lines.append(message("Measured on {device}: a forward and backward pass in {precision} took {ratio:.2f}x "
                                 "as long as in {baseline} (slower; the median of {rounds} rounds, from {low:.2f}x to "
                                 "{high:.2f}x), and a training step needed {memory:.2f}x the peak memory.", **numbers))
        if ratio < PAID_OFF:
            lines.append(message("So {precision} paid off here: at this size this device computes it faster than "
                                 "{baseline}.", **numbers))
        else:
            lines.append(message("So {precision} did not pay off here: the model and the batch may be too small for "
                                 "faster 16-bit arithmetic to outweigh autocast's conversions, or this device has no "
                                 "fast {precision} units. Try a larger batch (measure_batch_size = 32) or model "
                                 "(distilbert-base-cased).", **numbers))
        if hardware and ratio > SLOWER and row["precision"] == "bfloat16":
            lines += _bf16_slowdown(device, bf16_instructions, gpu_bf16)
    return "\n".join(lines)


def speed_explanation(device, bf16_instructions=None, gpu_bf16=None):
    """One line on what decides bfloat16's speed on `device`, from its hardware as `conclusion` reads it
    (the same defaults): printed beside a student's prediction of the time ratio."""
    device = torch.device(device)
    if device.type == "cuda":
        native = torch.cuda.is_bf16_supported(including_emulation=False) if gpu_bf16 is None else gpu_bf16
        if native:
            return message("This GPU computes bfloat16 natively (compute capability 8.0, Ampere, or newer): the "
                           "larger the matrix products, the more time bfloat16 saves.")
        return message("This GPU has no native bfloat16 arithmetic (it came with compute capability 8.0, Ampere), "
                       "so bfloat16 is slow on it.")
    if device.type != "cpu":
        return message("What bfloat16 saves depends on whether {device} multiplies in 16 bits quickly, and on the "
                       "size of the matrix products.", device=device.type)
    flags = cpu_bf16_instructions() if bf16_instructions is None else bf16_instructions
    if flags:
        return message("This CPU has bfloat16 instructions ({flags}): its bfloat16 matrix products are fast, but "
                       "autocast converts the weights in every forward pass, and only large matrix products save "
                       "more than that costs.", flags=", ".join(flags))
    if flags == []:
        return message("This CPU reports no bfloat16 instructions in /proc/cpuinfo (avx512_bf16 or amx_bf16 on x86, "
                       "bf16 on Arm): it has no fast bfloat16 matrix product, so bfloat16 is slower than float32.")
    return message("Whether this CPU has bfloat16 instructions is unknown (no /proc/cpuinfo to read).")


def _bf16_slowdown(device, bf16_instructions, gpu_bf16):
    """What the hardware says about a bfloat16 pass that was measured slower (no lines when it says nothing)."""
    if device.type == "cuda":
        native = torch.cuda.is_bf16_supported(including_emulation=False) if gpu_bf16 is None else gpu_bf16
        return [] if native else [message(
            "This GPU has no native bfloat16 arithmetic (it came with compute capability 8.0, Ampere), "
            "which explains the slowdown.")]
    if device.type != "cpu":
        return []
    flags = cpu_bf16_instructions() if bf16_instructions is None else bf16_instructions
    if flags:
        return [message("This CPU has bfloat16 instructions ({flags}), so the likely cause is the size: the matrix "
                        "products are too small to pay for autocast's conversions.", flags=", ".join(flags))]
    if flags == []:
        return [message("This CPU reports no bfloat16 instructions in /proc/cpuinfo (avx512_bf16 or amx_bf16 on x86, "
                        "bf16 on Arm): it has no fast bfloat16 matrix product, which explains the slowdown.")]
    return [message("Whether this CPU has bfloat16 instructions is unknown (no /proc/cpuinfo to read).")]
