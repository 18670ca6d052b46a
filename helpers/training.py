"""The training loops of the slides: plain PyTorch and Accelerate, each with optional accumulation.

`train_pytorch(..., gradient_accumulation_steps=1)` is the basic loop; with N > 1 it is
accumulation by hand. `train_accelerate` is the same loop with an Accelerator, and with N > 1
it uses `accelerator.accumulate(model)`. All four give the same parameters after each optimizer
step (tests/test_equivalence.py): every example weighs 1 / (examples in its optimizer step),
also in a shorter last window, where the slides' `loss / N` would give it too little weight.
"""
import math
import time
from dataclasses import dataclass, field

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from .checks import require_positive_int
from .metrics import classification_metrics
from .timing import wait_for


@dataclass
class History:
    """What training did, one entry per optimizer step."""
    loss: list = field(default_factory=list)           # mean training loss of the step's examples
    learning_rate: list = field(default_factory=list)  # learning rate the step used
    scales: list = field(default_factory=list)         # float16 mixed precision: GradScaler's scale
    seconds: float = 0.0

    @property
    def optimizer_steps(self):
        return len(self.loss)


def optimizer_steps_per_epoch(num_batches, gradient_accumulation_steps):
    """One optimizer step per N batches, plus one for a shorter last window."""
    return math.ceil(num_batches / gradient_accumulation_steps)


def accumulation_step_due(index, num_batches, gradient_accumulation_steps):
    """True when the optimizer steps after batch `index` (from 0) of `num_batches`: at the end of
    every group of N batches, and after the last batch (a shorter last group). Lesson 3's exercise 1."""
    return (index + 1) % gradient_accumulation_steps == 0 or index + 1 == num_batches


def examples_per_window(num_examples, batch_size, gradient_accumulation_steps):
    """How many examples each optimizer step of an epoch learns from; the last may be fewer."""
    batch_sizes = [min(batch_size, num_examples - start) for start in range(0, num_examples, batch_size)]
    n = gradient_accumulation_steps
    return [sum(batch_sizes[i:i + n]) for i in range(0, len(batch_sizes), n)]


def make_scheduler(optimizer, num_training_steps, scheduler_steps_per_optimizer_step=1):
    """Linear warm-up over the first 10% of optimizer steps, then linear decay to 0.

    Accelerate's prepared scheduler steps once per process in every optimizer step: with P
    processes pass P, so that warm-up and decay still count whole optimizer steps.
    """
    k = scheduler_steps_per_optimizer_step
    return get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=int(num_training_steps * 0.1) * k, num_training_steps=num_training_steps * k)


def setup_training(model, dataloader, epochs, learning_rate, gradient_accumulation_steps=1, optimizer=None,
                   processes=1):
    """What a training loop needs before its first step: (optimizer, lr_scheduler, windows).

    Checks the arguments; builds Adam with `learning_rate` when `optimizer` is None, and the warm-up
    schedule counted in optimizer steps (`make_scheduler`); `windows` holds the examples of each
    optimizer step's window of one epoch (`examples_per_window`). With P processes each optimizer
    step learns from P batches (one per process). The loops here and `train_mixed_precision` use it.
    """
    require_positive_int("epochs", epochs)
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    if len(dataloader) == 0:
        raise ValueError("dataloader is empty: there is nothing to train on")
    _check_labels(dataloader.dataset, model.config.num_labels)
    if optimizer is None:
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    batches_per_process = math.ceil(len(dataloader) / processes)
    total_steps = optimizer_steps_per_epoch(batches_per_process, gradient_accumulation_steps) * epochs
    windows = examples_per_window(len(dataloader.dataset), dataloader.batch_size * processes,
                                  gradient_accumulation_steps)
    assert len(windows) * epochs == total_steps, "a window per optimizer step"
    return optimizer, make_scheduler(optimizer, total_steps, processes), windows


def _check_labels(dataset, num_labels):
    """Labels outside 0 .. num_labels - 1 would fail deep inside the loss; say so here."""
    labels = set(dataset.unique("labels")) if "labels" in getattr(dataset, "column_names", ()) else set()
    wrong = sorted(label for label in labels if not 0 <= label < num_labels)
    if wrong:
        raise ValueError(
            f"the data has labels {sorted(labels)}, but the model has num_labels={num_labels}; "
            f"load the model with load_model(num_labels={max(labels) + 1})")


def default_device():
    """Where training runs unless told otherwise: the GPU (cuda) when there is one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_pytorch(model, dataloader, *, epochs=1, learning_rate=5e-4, gradient_accumulation_steps=1,
                  optimizer=None, device=None, progress=True):
    """The basic PyTorch loop; with gradient_accumulation_steps=N > 1, accumulation by hand."""
    optimizer, lr_scheduler, windows = setup_training(
        model, dataloader, epochs, learning_rate, gradient_accumulation_steps, optimizer)
    device = device or default_device()
    model.to(device).train()
    history, window_loss, start = History(), 0.0, time.perf_counter()
    n = gradient_accumulation_steps
    with tqdm(total=len(windows) * epochs, desc="train_pytorch", unit="step", disable=not progress) as bar:
        for epoch in range(epochs):
            for index, batch in enumerate(dataloader):
                batch = {key: value.to(device) for key, value in batch.items()}
                outputs = model(**batch)
                # loss / N on the slides; this also weighs a shorter last window right
                loss = outputs.loss * len(batch["labels"]) / windows[index // n]
                loss.backward()
                window_loss += loss.item()
                if accumulation_step_due(index, len(dataloader), n):
                    history.loss.append(window_loss)
                    history.learning_rate.append(lr_scheduler.get_last_lr()[0])
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
                    window_loss = 0.0
                    bar.update()
                    bar.set_postfix(loss=f"{history.loss[-1]:.3f}")
    wait_for(device)  # the last optimizer step may still run on a GPU (loss.item() came before it)
    history.seconds = time.perf_counter() - start
    return history


def train_accelerate(model, dataloader, *, epochs=1, learning_rate=5e-4, gradient_accumulation_steps=1,
                     optimizer=None, progress=True, **accelerator_options):
    """The same loop with Accelerate; with N > 1 it uses `accelerator.accumulate(model)`.

    accelerator_options go to the Accelerator: cpu=True runs on the CPU; mixed_precision="bf16"
    (or "fp16" on a GPU) makes `prepare` run the model's forward pass under torch.autocast (see
    helpers.precision). Works in one process and under a launcher (see `helpers.run_on_processes`).
    Returns the History and the Accelerator (it knows the process index and the device).
    """
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    accelerator = Accelerator(device_placement=True, gradient_accumulation_steps=gradient_accumulation_steps,
                              **accelerator_options)
    processes, n = accelerator.num_processes, gradient_accumulation_steps
    # each process sees 1/processes of every window
    optimizer, lr_scheduler, windows = setup_training(
        model, dataloader, epochs, learning_rate, gradient_accumulation_steps, optimizer, processes)
    model, optimizer, dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, dataloader, lr_scheduler)
    model.train()
    history, window_loss, start = History(), 0.0, time.perf_counter()
    show = progress and accelerator.is_local_main_process
    with tqdm(total=len(windows) * epochs, desc="train_accelerate", unit="step", disable=not show) as bar:
        for epoch in range(epochs):
            for index, batch in enumerate(dataloader):
                with accelerator.accumulate(model):
                    outputs = model(**batch)
                    # accelerator.backward divides by N, and processes average their gradients:
                    # undo both, so that each example weighs 1 / (examples in the window)
                    loss = outputs.loss * len(batch["labels"]) / windows[index // n] * n * processes
                    accelerator.backward(loss)
                    window_loss += loss.item() / (n * processes)
                    if accelerator.sync_gradients:
                        history.learning_rate.append(lr_scheduler.get_last_lr()[0])
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
                if accelerator.sync_gradients:
                    step_loss = accelerator.reduce(torch.tensor(window_loss, device=accelerator.device), "sum")
                    history.loss.append(step_loss.item())
                    window_loss = 0.0
                    bar.update()
                    bar.set_postfix(loss=f"{history.loss[-1]:.3f}")
    wait_for(accelerator.device)
    history.seconds = time.perf_counter() - start
    return history, accelerator


@torch.no_grad()
def evaluate(model, dataloader, device=None):
    """Loss, accuracy and F1 of `model` on every batch of `dataloader`."""
    device = device or next(model.parameters()).device
    model.eval()
    losses, predictions, labels = [], [], []
    for batch in dataloader:
        batch = {key: value.to(device) for key, value in batch.items()}
        outputs = model(**batch)
        losses.append(outputs.loss.item() * len(batch["labels"]))
        predictions.append(outputs.logits.argmax(dim=-1).cpu())
        labels.append(batch["labels"].cpu())
    model.train()
    labels = torch.cat(labels)
    metrics = classification_metrics(torch.cat(predictions).numpy(), labels.numpy())
    return {"loss": sum(losses) / len(labels), **metrics}


def parameters_of(model):
    """A copy of the model's parameters, on the CPU (works for prepared and wrapped models too)."""
    model = getattr(model, "module", model)
    return {name: value.detach().cpu().clone() for name, value in model.named_parameters()}


def parameter_difference(model_a, model_b):
    """The largest absolute difference between two models' parameters (models or parameters_of dicts)."""
    a = model_a if isinstance(model_a, dict) else parameters_of(model_a)
    b = model_b if isinstance(model_b, dict) else parameters_of(model_b)
    return max((a[name] - b[name]).abs().max().item() for name in a)


def fresh_accelerator_state():
    """Forget an earlier Accelerator, so that a run can make its own (for example with cpu=True)."""
    AcceleratorState._reset_state(reset_partial_state=True)
