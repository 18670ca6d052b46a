"""Measure how much memory one optimizer step of training really allocates.

`measure_peak_memory(model, dataset, tokenizer, micro_batch_size, gradient_accumulation_steps)`
runs one optimizer step (N forward + backward passes of `micro_batch_size` examples, then
`optimizer.step()`) and returns the peak memory it allocated, in MiB, above what was allocated
when the step began (so the weights and the input batches are not counted; the gradients, Adam's
two moments, the activations and every temporary are).

How it is measured (real allocations, not sizes guessed from shapes):
- GPU: `torch.cuda.reset_peak_memory_stats()`, then `torch.cuda.max_memory_allocated()` minus
  `torch.cuda.memory_allocated()` from before the step.
- CPU, method="allocator" (the default): torch's profiler with `profile_memory=True` records every
  allocation and free of torch's CPU allocator with its size and time; the peak is the maximum
  of their running sum. It counts what `max_memory_allocated` counts on a GPU (bytes held by
  tensors), except that the CUDA caching allocator rounds every block up to a multiple of 512
  bytes (c10's kMinBlockSize, by default), so the two agree to within that rounding. It is exact
  and repeatable: it grows with the micro-batch and stays flat across N at a fixed micro-batch
  (tests/test_memory.py checks both).
- CPU, method="rss": what the operating system gave the process. `malloc_trim(0)` returns freed
  heap to the system, writing "5" to /proc/self/clear_refs resets the peak resident set, and the
  answer is VmHWM after the step minus VmRSS before it (Linux only). It also counts the
  allocator's overhead and fragmentation, so it reads a little higher and varies from run to run
  by a few MiB; it is the cross-check that the allocator's number is not invented.

The step runs on `model` itself and restores its weights and train/eval mode afterwards (any
gradients it held are dropped). One step of the course's small model takes well under a second.
"""
import contextlib
import ctypes
import itertools
import os
import sys

import torch

from .checks import require_positive_int
from .data import make_dataloader

MIB = 2 ** 20
METHODS = ("allocator", "rss")


def measure_peak_memory(model, dataset, tokenizer, micro_batch_size, gradient_accumulation_steps=1,
                        *, method="allocator", autocast_dtype=None):
    """Peak MiB one optimizer step allocates: N micro-batches of `micro_batch_size`, then a step.

    The effective batch is micro_batch_size * gradient_accumulation_steps examples, the first ones
    of `dataset` (tokenized), batched with dynamic padding by `helpers.make_dataloader`.
    On a GPU the answer comes from torch.cuda.max_memory_allocated; on the CPU from `method`
    (see the module's docstring): "allocator" (exact tensor bytes) or "rss" (resident set).
    autocast_dtype (torch.bfloat16 or torch.float16) runs the forward passes under torch.autocast
    (mixed precision); None or torch.float32: in float32.
    """
    require_positive_int("micro_batch_size", micro_batch_size)
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    if method not in METHODS:
        raise ValueError(f"measure_peak_memory(method={method!r}): use one of {METHODS}")
    n = gradient_accumulation_steps
    if len(dataset) < micro_batch_size * n:
        raise ValueError(
            f"measure_peak_memory: an effective batch of {micro_batch_size} x {n} = "
            f"{micro_batch_size * n} examples needs that many, and the data set has {len(dataset)}")
    device = next(model.parameters()).device
    batches = [{key: value.to(device) for key, value in batch.items()}
               for batch in itertools.islice(make_dataloader(dataset, tokenizer, micro_batch_size), n)]
    saved = {key: value.detach().clone() for key, value in model.state_dict().items()}
    was_training = model.training
    model.zero_grad(set_to_none=True)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    mixed = autocast_dtype not in (None, torch.float32)

    def one_optimizer_step():
        for batch in batches:
            with torch.autocast(device.type, dtype=autocast_dtype, enabled=mixed):
                loss = model(**batch).loss / n
            loss.backward()
            del loss
        optimizer.step()

    try:
        if device.type == "cuda":
            peak = _peak_cuda(one_optimizer_step, device)
        elif method == "allocator":
            peak = _peak_allocator(one_optimizer_step)
        else:
            peak = _peak_resident_set(one_optimizer_step)
    finally:
        optimizer.zero_grad(set_to_none=True)
        model.load_state_dict(saved)
        model.train(was_training)
    return peak / MIB


def _peak_cuda(step, device):
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def _peak_allocator(step):
    """Largest running sum of the allocator's allocations (+) and frees (-) during `step`."""
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True)
    with _silent_stderr():  # the profiler prints start/stop lines on stderr (fd 2)
        profiler.start()
    try:
        step()
    finally:
        with _silent_stderr():
            profiler.stop()
    events = [event for event in profiler.profiler.kineto_results.events() if event.name() == "[memory]"]
    held = peak = 0
    for event in sorted(events, key=lambda event: event.start_ns()):
        held += event.nbytes()
        peak = max(peak, held)
    return peak


def _peak_resident_set(step):
    """VmHWM after `step` minus VmRSS before it, with freed heap trimmed and the peak reset."""
    if not os.path.exists("/proc/self/clear_refs"):
        raise OSError('measure_peak_memory(method="rss") needs Linux\'s /proc; use method="allocator"')
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # reset VmHWM to the current resident set
    before = _proc_status_bytes("VmRSS")
    step()
    return _proc_status_bytes("VmHWM") - before


def _proc_status_bytes(key):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # the value is in kB
    raise OSError(f"/proc/self/status has no {key}")


@contextlib.contextmanager
def _silent_stderr():
    """Send file descriptor 2 to /dev/null for a moment (C code writes there, not to sys.stderr)."""
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError):
        pass
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        ctypes.CDLL(None).fflush(None)
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
