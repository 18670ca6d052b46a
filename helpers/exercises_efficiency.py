"""Tiny problems and spies for the graded tests of lessons 5 (checkpointing) and 7 (mixed precision).

Like `helpers.exercises`: the tests build a small problem, run the student's code on it, and
compare with a plain computation, so that a failing test can say what went wrong.
"""
import contextlib

import torch

from .exercises import _tiny_dataset
from .data import make_dataloader
from .modeling import load_model, load_tokenizer
from .quiet import quiet


def tiny_batch(num_examples=8, seed=0):
    """One padded batch of `num_examples` examples of the course's corpus."""
    with quiet():
        return next(iter(make_dataloader(_tiny_dataset(num_examples, seed), load_tokenizer(), num_examples)))


def tiny_layers(num_layers=4, width=32, seed=0):
    """A stack of small feed-forward layers (Linear, GELU, Linear), like the blocks of a transformer."""
    torch.manual_seed(seed)
    return torch.nn.ModuleList(
        torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))
        for _ in range(num_layers))


def layer_gradients(layers):
    """The gradient of every parameter of `layers` (None where there is none), as copies."""
    return [None if p.grad is None else p.grad.detach().clone() for p in layers.parameters()]


def model_with_broken_checkpointing():
    """The course's model (dropout on) whose checkpointing does NOT replay the random state.

    Recomputing a layer in the backward pass then drops other units than the forward pass did,
    so the gradients change: a correct comparison of gradients must notice it.
    """
    with quiet():
        model = load_model()
    enable = type(model).activation_checkpointing_enable

    def enable_without_replaying_dropout(*args, **kwargs):
        enable(model, activation_checkpointing_kwargs={"use_reentrant": False, "preserve_rng_state": False})

    model.activation_checkpointing_enable = enable_without_replaying_dropout
    return model.train()


class CountingGradScaler(torch.amp.GradScaler):
    """A GradScaler that counts its scale(), step() and update() calls."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = {"scale": 0, "step": 0, "update": 0}

    def scale(self, outputs):
        self.calls["scale"] += 1
        return super().scale(outputs)

    def step(self, optimizer, *args, **kwargs):
        self.calls["step"] += 1
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None):
        self.calls["update"] += 1
        return super().update(new_scale)


@contextlib.contextmanager
def output_dtypes(module):
    """Record the dtype of every output of `module` (e.g. the classifier) inside the block."""
    seen = []
    handle = module.register_forward_hook(lambda _module, _inputs, output: seen.append(output.dtype))
    try:
        yield seen
    finally:
        handle.remove()
