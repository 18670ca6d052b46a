"""Gradient clipping where it bites: with gradient accumulation (lesson 3) and with a float16 GradScaler (lesson 7).

`torch.nn.utils.clip_grad_norm_(parameters, max_norm)` computes the norm of all gradients together
and, when it is above `max_norm`, multiplies every gradient by `max_norm / norm`; it returns the
norm before clipping.

- With accumulation the gradient of an optimizer step is the sum of its micro-batches' gradients,
  and only that sum is clipped: once per optimizer step, after the group's last backward
  (`if accelerator.sync_gradients: accelerator.clip_grad_norm_(...)`). Clipping every micro-batch
  clips partial sums, and changes the direction of the step. The Trainer clips the same way, once
  per optimizer step (transformers/trainer.py: `if do_sync_step:` ... `_clip_grad_norm`).
- With a GradScaler, `.grad` holds the gradients times the scale (65536 at first). Clip after
  `scaler.unscale_(optimizer)`, which divides them by the scale; `scaler.step(optimizer)` then does
  not divide them again (torch/amp/grad_scaler.py: step() calls unscale_ only when the optimizer's
  stage is still READY). `accelerator.clip_grad_norm_` calls `accelerator.unscale_gradients()`
  first, which calls the scaler's `unscale_` when mixed_precision="fp16" (accelerate/accelerator.py).

The references below are the graded tests' yardsticks; the spies record what a student's code did.
"""
import contextlib
from unittest import mock

import torch
from accelerate import Accelerator

from .training import accumulation_step_due


def gradient_norm(parameters):
    """The norm of all gradients together (what clip_grad_norm_ compares with max_norm)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    return torch.nn.utils.get_total_norm(grads).item()


def train_accumulating_clipped(model, dataloader, optimizer, lr_scheduler, gradient_accumulation_steps, max_norm,
                               device="cpu"):
    """Reference: one epoch of accumulation by hand (full groups: loss / N), the summed gradient clipped to
    `max_norm` once per optimizer step. Returns the gradient norm of every optimizer step, before clipping."""
    model.to(device).train()
    norms = []
    for index, batch in enumerate(dataloader):
        batch = {key: value.to(device) for key, value in batch.items()}
        (model(**batch).loss / gradient_accumulation_steps).backward()
        if accumulation_step_due(index, len(dataloader), gradient_accumulation_steps):
            norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item())
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
    return norms


def clipped_training_step(model, batch, optimizer, scaler, device_type, dtype, max_norm):
    """Reference: one mixed-precision step, the gradients unscaled, then clipped to `max_norm`; the loss (a float)."""
    with torch.autocast(device_type, dtype=dtype):
        loss = model(**batch).loss
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)       # .grad / scale: the real gradients
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)           # does not unscale again; skips the step on inf/nan
    scaler.update()
    optimizer.zero_grad()
    return loss.item()


class RecordingGradScaler(torch.amp.GradScaler):
    """A GradScaler that records the order of the calls made to it: "scale", "unscale_", "step", "update"
    (the unscale_ that step() does by itself is not recorded)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.order = []
        self._stepping = False

    def scale(self, outputs):
        self.order.append("scale")
        return super().scale(outputs)

    def unscale_(self, optimizer):
        if not self._stepping:
            self.order.append("unscale_")
        return super().unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.order.append("step")
        self._stepping = True
        try:
            return super().step(optimizer, *args, **kwargs)
        finally:
            self._stepping = False

    def update(self, new_scale=None):
        self.order.append("update")
        return super().update(new_scale)


@contextlib.contextmanager
def spy_on_clipping():
    """Record every gradient clipping inside the block: accelerator.clip_grad_norm_ and
    torch.nn.utils.clip_grad_norm_ (also when the first calls the second only once).

    Yields a list of dicts: "by" ("accelerator" or "torch"), "max_norm", "norm" (the norm of the
    gradients it got, before clipping) and, for the accelerator, "sync_gradients".
    """
    calls = []
    accelerator_clip, torch_clip = Accelerator.clip_grad_norm_, torch.nn.utils.clip_grad_norm_
    inside_accelerator = []

    def spy_accelerator(self, parameters, max_norm, *args, **kwargs):
        parameters = list(parameters)
        call = {"by": "accelerator", "max_norm": max_norm, "sync_gradients": self.sync_gradients}
        calls.append(call)
        inside_accelerator.append(True)
        try:
            norm = accelerator_clip(self, parameters, max_norm, *args, **kwargs)
        finally:
            inside_accelerator.pop()
        call["norm"] = None if norm is None else float(norm)
        return norm

    def spy_torch(parameters, max_norm, *args, **kwargs):
        norm = torch_clip(parameters, max_norm, *args, **kwargs)
        if not inside_accelerator:
            calls.append({"by": "torch", "max_norm": max_norm, "norm": float(norm)})
        return norm

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(Accelerator, "clip_grad_norm_", spy_accelerator))
        stack.enter_context(mock.patch.object(torch.nn.utils, "clip_grad_norm_", spy_torch))
        stack.enter_context(mock.patch.object(torch.nn.utils.clip_grad, "clip_grad_norm_", spy_torch))
        yield calls
