"""Tiny problems and spies for the graded tests of lessons 5 (checkpointing) and 7 (mixed precision).

Like `helpers.exercises`: the tests build a small problem, run the student's code on it, and
compare with a plain computation, so that a failing test can say what went wrong.
"""
import contextlib

import torch

from . import checkpointing
from .exercises import _tiny_dataset
from .data import make_dataloader
from .modeling import load_model, load_tokenizer
from .quiet import quiet


def tiny_batch(num_examples=8, seed=0):
    """One padded batch of `num_examples` examples of the course's corpus."""
    with quiet():
        return next(iter(make_dataloader(_tiny_dataset(num_examples, seed), load_tokenizer(), num_examples)))


def tiny_layers(num_layers=4, width=32, seed=0, dropout=0.0):
    """A stack of small feed-forward layers (Linear, GELU, Linear), like the blocks of a transformer;
    with dropout > 0 a Dropout after the GELU, so that a recomputed layer must replay the random state."""
    torch.manual_seed(seed)

    def layer():
        middle = [torch.nn.Dropout(dropout)] if dropout else []
        return torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), *middle,
                                   torch.nn.Linear(4 * width, width))

    return torch.nn.ModuleList(layer() for _ in range(num_layers))


def layer_input_bytes(layers, hidden):
    """The bytes of the input of every layer in a plain forward pass: what checkpointing each layer keeps."""
    sizes = []
    handles = [layer.register_forward_pre_hook(
        lambda _layer, inputs: sizes.append(inputs[0].numel() * inputs[0].element_size())) for layer in layers]
    try:
        with torch.no_grad():
            for layer in layers:
                hidden = layer(hidden)
    finally:
        for handle in handles:
            handle.remove()
    return sum(sizes)


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


def broken_checkpointing_cases(model, batch, seeds=range(20)):
    """[(seed, largest absolute difference)] for a model from `model_with_broken_checkpointing`: two seeds,
    one where the largest difference (without minus with checkpointing) is positive, one where it is negative.

    On both only the largest *absolute* difference is right: a max without abs, or with the other sign, is
    wrong on one of them, and so is a mean, a norm or a fixed seed.
    """
    cases = {}
    for seed in seeds:
        plain = checkpointing.gradients(model, batch, checkpointing=False, seed=seed)
        checkpointed = checkpointing.gradients(model, batch, checkpointing=True, seed=seed)
        differences = [plain[name] - checkpointed[name] for name in plain]
        largest = max(differences, key=lambda d: d.abs().max().item())
        extreme = largest.flatten()[largest.abs().argmax()].item()
        cases.setdefault(extreme > 0, (seed, abs(extreme)))
        if len(cases) == 2:
            return [cases[True], cases[False]]
    raise RuntimeError(f"broken_checkpointing_cases: no two seeds of {seeds} with differences of both signs")


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
