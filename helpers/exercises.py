"""Tiny training problems and spies for the lessons' graded tests.

A test builds the same tiny problem twice (same data, same starting weights, dropout off),
trains one copy with the student's code and one with the course's reference loop, and compares
the parameters. The spies count what the student's code did, so that a failing test can say
what went wrong ("the scheduler stepped 6 times; it should step 3 times"). The checks of lessons
1 and 2 (the scheduler, Accelerate's prepare) are in helpers/exercises_loops.py; lessons reach
them here, as exercises.scheduler_problem.
SGD, not Adam: Adam's first step hardly depends on the size of the gradient, so it would hide
a loss that is scaled wrongly.

Lessons 5 (activation checkpointing) and 7 (mixed precision) compare with a plain computation
instead: their tiny layers and batches, a model whose checkpointing is broken on purpose, a
counting GradScaler and a recorder of output dtypes are at the end.
"""
import contextlib
import functools
from unittest import mock

import torch
from accelerate import Accelerator

from .clipping import RecordingGradScaler
from .data import load_data, make_dataloader, tokenize_data
from .modeling import load_model, load_tokenizer
from .quiet import quiet
# the tools a lesson's tests compare runs with, as exercises.parameter_difference and so on
# accumulation_step_due: the course's answer to lesson 3's exercise 1, for later tests (course_answers)
from .training import (accumulation_step_due, fresh_accelerator_state,  # noqa: F401
                       parameter_difference, parameters_of)
from .exercises_loops import (forgot_attention_mask, learning_rates, prepare_problem,  # noqa: F401
                              schedule_mismatch, scheduler_problem)


class CountingSGD(torch.optim.SGD):
    """Plain SGD that counts its `step()` and `zero_grad()` calls."""

    def __init__(self, params, lr=0.5):
        super().__init__(params, lr=lr)
        self.steps = 0
        self.zero_grad_calls = 0
        self.stepped_after = []   # after `watch(model)`: the batch (from 0) each step came after
        self.zeroed_after = []    # ... and each zero_grad (-1: before the first batch)
        self._forward_calls = None

    def watch(self, model):
        """Count the model's calls, so that each step records after which batch it came."""
        self._forward_calls = spy_on_forward(model)
        return self._forward_calls

    def step(self, closure=None):
        self.steps += 1
        if self._forward_calls is not None:
            self.stepped_after.append(len(self._forward_calls) - 1)
        return super().step(closure)

    def zero_grad(self, set_to_none=True):
        self.zero_grad_calls += 1
        if self._forward_calls is not None:
            self.zeroed_after.append(len(self._forward_calls) - 1)
        return super().zero_grad(set_to_none=set_to_none)

    def zeroed_within_a_group(self):
        """The batches after which zero_grad() came without an optimizer step: the gradients of the
        group so far were thrown away (lesson 1's habit of zeroing before every batch)."""
        return [batch for batch in self.zeroed_after if batch >= 0 and batch not in self.stepped_after]


@functools.lru_cache(maxsize=8)
def _tiny_dataset(num_examples, seed):
    with quiet():
        data = load_data(sizes={"train": num_examples, "validation": 8, "test": 8}, seed=seed)
        return tokenize_data(data, load_tokenizer())["train"]


def tiny_problem(num_examples=24, batch_size=8, seed=0, learning_rate=0.5):
    """(model, dataloader, optimizer): a small model without dropout, a few padded batches, SGD.

    Every call gives the same starting weights and the same batches, in the same order.
    """
    with quiet():
        tokenizer = load_tokenizer()
        model = load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        dataloader = make_dataloader(_tiny_dataset(num_examples, seed), tokenizer, batch_size)
    return model, dataloader, CountingSGD(model.parameters(), lr=learning_rate)


def spy_on_forward(model):
    """Record the keyword arguments of every call of `model`, and the loss it returned (None without
    labels); returns the list it fills."""
    calls = []
    forward = model.forward

    @functools.wraps(forward)
    def recording_forward(*args, **kwargs):
        outputs = forward(*args, **kwargs)
        loss = getattr(outputs, "loss", None)
        calls.append({"positional": len(args), "keywords": sorted(kwargs),
                      "loss": None if loss is None else loss.item()})
        return outputs

    model.forward = recording_forward
    return calls


@contextlib.contextmanager
def course_answers(namespace, **answers):
    """While the block runs, `namespace` (a notebook's globals) holds the course's `answers` to earlier
    exercises in place of the student's, so that a test grades its own exercise only: one slip in
    exercise 1 does not cost the points of exercise 3 too. Then the student's come back."""
    saved = {name: namespace[name] for name in answers if name in namespace}
    namespace.update(answers)
    try:
        yield
    finally:
        for name in answers:
            if name in saved:
                namespace[name] = saved[name]
            else:
                del namespace[name]


@contextlib.contextmanager
def spy_on_accelerator():
    """Count what the code inside the block asks of every Accelerator.

    Yields a dict: "created" (the keyword arguments of each Accelerator(...)), "prepared"
    (how many objects each prepare(...) got), "backward", "accumulate" and "gathered" (call counts;
    "gathered" counts gather, reduce and gather_for_metrics, the calls that collect a tensor from
    every process).
    """
    seen = {"created": [], "prepared": [], "backward": 0, "accumulate": 0, "gathered": 0}
    init, prepare = Accelerator.__init__, Accelerator.prepare
    backward, accumulate = Accelerator.backward, Accelerator.accumulate
    collectives = {name: getattr(Accelerator, name) for name in ("gather", "reduce", "gather_for_metrics")}

    def spy_init(self, *args, **kwargs):
        seen["created"].append(dict(kwargs))
        init(self, *args, **kwargs)

    def spy_prepare(self, *args, **kwargs):
        seen["prepared"].append(len(args))
        return prepare(self, *args, **kwargs)

    def spy_backward(self, loss, **kwargs):
        seen["backward"] += 1
        return backward(self, loss, **kwargs)

    def spy_accumulate(self, *models):
        seen["accumulate"] += 1
        return accumulate(self, *models)

    def spy_collective(collective):
        @functools.wraps(collective)
        def counted(self, *args, **kwargs):
            seen["gathered"] += 1
            return collective(self, *args, **kwargs)
        return counted

    with contextlib.ExitStack() as patches:
        for name, spy in [("__init__", spy_init), ("prepare", spy_prepare), ("backward", spy_backward),
                          ("accumulate", spy_accumulate),
                          *((name, spy_collective(collective)) for name, collective in collectives.items())]:
            patches.enter_context(mock.patch.object(Accelerator, name, spy))
        yield seen


@contextlib.contextmanager
def spy_on_progress():
    """Inside the block, record the TrainingProgress of every run prepared by `helpers.prepare_resumable`.

    Yields the list it fills, so that a test can read `completed_steps` after a student's run.
    """
    import helpers
    from . import resume
    progresses = []
    prepare = resume.prepare_resumable

    def recording_prepare(*args, **kwargs):
        prepared = prepare(*args, **kwargs)
        progresses.append(prepared[-1])
        return prepared

    with mock.patch.object(resume, "prepare_resumable", recording_prepare), \
            mock.patch.object(helpers, "prepare_resumable", recording_prepare):
        yield progresses


# ---- lessons 5 (activation checkpointing) and 7 (mixed precision) ----

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
    from . import checkpointing
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


class CountingGradScaler(RecordingGradScaler):
    """A GradScaler that counts its scale(), step() and update() calls (lesson 7's tests)."""

    @property
    def calls(self):
        return {name: self.order.count(name) for name in ("scale", "step", "update")}


@contextlib.contextmanager
def output_dtypes(module):
    """Record the dtype of every output of `module` (e.g. the classifier) inside the block."""
    seen = []
    handle = module.register_forward_hook(lambda _module, _inputs, output: seen.append(output.dtype))
    try:
        yield seen
    finally:
        handle.remove()
