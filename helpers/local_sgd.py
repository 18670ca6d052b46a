"""Local SGD: every process trains alone for K optimizer steps, then the processes average their models.

Data-parallel training (lesson 2) averages the gradients of the processes in every optimizer
step. `accelerate.local_sgd.LocalSGD` turns that off (the model runs inside DDP's `no_sync`)
and averages the parameters instead: every K optimizer steps (`local_sgd_steps`) and once more
when the `with` block ends. With plain SGD and K = 1 that is exactly data-parallel training
(the average of p - lr * g_i is p - lr * mean(g_i)); with Adam it is not, because each process
keeps its own moments (tests/test_local_sgd.py).

`train_local_sgd` counts the communication it causes: the gradient all-reduces of DDP (through a
communication hook) and the parameter averages of LocalSGD.
"""
import math
import time
from dataclasses import dataclass, field

import torch
from accelerate import Accelerator
from accelerate.local_sgd import LocalSGD
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .language import message, number
from .modeling import load_model
from .quiet import quiet
from .training import History, make_scheduler


@dataclass
class Communication:
    """What the processes sent each other during training (counted in one process)."""
    gradient_all_reduces: int = 0   # DDP: one per bucket of gradients, in every optimizer step
    parameter_averages: int = 0     # LocalSGD: one per K optimizer steps, and one at the end
    bytes_sent: int = 0             # bytes of the tensors this process reduced
    synchronisations: int = 0       # optimizer steps (or ends) at which the processes exchanged data
    average_after_steps: list = field(default_factory=list)  # LocalSGD: the steps done at each average


def count_gradient_all_reduces(model, communication):
    """Register a DDP communication hook that counts the gradient all-reduces and their bytes."""
    def counting_hook(state, bucket):
        communication.gradient_all_reduces += 1
        communication.bytes_sent += bucket.buffer().numel() * bucket.buffer().element_size()
        return default_hooks.allreduce_hook(state, bucket)

    model.register_comm_hook(None, counting_hook)


def count_parameter_averages(local_sgd, communication):
    """Wrap LocalSGD's averaging, so that each average and its bytes are counted."""
    average = local_sgd._sync_and_avg_model_params

    def counting_average():
        communication.parameter_averages += 1
        communication.average_after_steps.append(local_sgd.num_steps)
        communication.synchronisations += 1
        communication.bytes_sent += sum(p.numel() * p.element_size() for p in local_sgd.model.parameters())
        average()

    local_sgd._sync_and_avg_model_params = counting_average


def train_local_sgd(model, dataloader, *, local_sgd_steps=None, epochs=1, learning_rate=5e-4,
                    optimizer=None, progress=True):
    """Train on the processes of the launcher with Accelerator(cpu=True).

    local_sgd_steps=None: ordinary data-parallel training (gradients averaged every step);
    local_sgd_steps=K: LocalSGD, parameters averaged every K optimizer steps and at the end.
    Returns (History of this process's own losses, Communication, the Accelerator).
    """
    require_positive_int("epochs", epochs)
    if local_sgd_steps is not None:
        require_positive_int("local_sgd_steps", local_sgd_steps)
    optimizer = optimizer or torch.optim.Adam(model.parameters(), lr=learning_rate)
    accelerator = Accelerator(cpu=True)
    # every process takes every P-th batch; the prepared scheduler steps P times per optimizer step
    processes = accelerator.num_processes
    scheduler = make_scheduler(optimizer, math.ceil(len(dataloader) / processes) * epochs, processes)
    model, optimizer, dataloader, scheduler = accelerator.prepare(model, optimizer, dataloader, scheduler)
    communication, history = Communication(), History()
    if accelerator.num_processes > 1:
        count_gradient_all_reduces(model, communication)
    model.train()
    start = time.perf_counter()
    local_sgd = LocalSGD(accelerator=accelerator, model=model, local_sgd_steps=local_sgd_steps or 1,
                         enabled=local_sgd_steps is not None)
    count_parameter_averages(local_sgd, communication)
    show = progress and accelerator.is_local_main_process
    name = "data parallel" if local_sgd_steps is None else f"local SGD, K={local_sgd_steps}"
    with local_sgd, tqdm(total=len(dataloader) * epochs, desc=name, unit="step", disable=not show) as bar:
        for epoch in range(epochs):
            for batch in dataloader:
                reduces_before = communication.gradient_all_reduces
                history.learning_rate.append(scheduler.get_last_lr()[0])
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                local_sgd.step()
                # the loss of this process only: reducing it here would be one more synchronisation
                history.loss.append(loss.item())
                communication.synchronisations += communication.gradient_all_reduces > reduces_before
                bar.update()
    history.seconds = time.perf_counter() - start
    return history, communication, accelerator


@dataclass(frozen=True)
class LocalSGDTraining:
    """How `measure_local_sgd` trains every variant, on every process."""
    model_name: str | None = None
    batch_size: int = 8           # per process
    epochs: int = 1
    learning_rate: float = 5e-4
    optimizer: str = "adam"       # or "sgd"

    def __post_init__(self):
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}")


def _train_each(tokenized_train, tokenizer, variants, training):
    """On every process: train a fresh copy of the model per K in `variants`; return rows."""
    rows = []
    for local_sgd_steps in variants:
        with quiet():
            torch.manual_seed(0)
            model = load_model(training.model_name, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
            loader = make_dataloader(tokenized_train, tokenizer, training.batch_size)
            lr = training.learning_rate
            optimizer = (torch.optim.SGD(model.parameters(), lr=lr) if training.optimizer == "sgd"
                         else torch.optim.Adam(model.parameters(), lr=lr))
        history, communication, accelerator = train_local_sgd(
            model, loader, local_sgd_steps=local_sgd_steps, epochs=training.epochs, optimizer=optimizer,
            progress=False)
        # the mean loss over the processes, step by step (one gather, after training)
        losses = accelerator.gather(torch.tensor(history.loss)).view(accelerator.num_processes, -1).mean(0)
        rows.append({
            "local_sgd_steps": local_sgd_steps,
            "optimizer_steps": history.optimizer_steps,
            "synchronisations": communication.synchronisations,
            "gradient_all_reduces": communication.gradient_all_reduces,
            "parameter_averages": communication.parameter_averages,
            "average_after_steps": communication.average_after_steps,
            "processes": accelerator.num_processes,
            "bytes_sent": communication.bytes_sent,
            "seconds": history.seconds,
            "loss": losses.tolist(),
            "parameters": {name: p.detach().clone() for name, p in accelerator.unwrap_model(model).named_parameters()},
        })
    return rows


def measure_local_sgd(tokenized_train, tokenizer, *, variants=(None, 1, 4, 16), num_processes=2, **training):
    """Train data parallel (None) and LocalSGD with each K in `variants` on `num_processes` CPU processes.

    training: the keywords of `LocalSGDTraining` (model_name, batch_size per process, epochs,
    learning_rate, optimizer "adam" or "sgd"). Every run starts from the same weights (dropout off)
    and sees the same batches. Returns one row (a dict of plain numbers, the loss per step and the
    final parameters) per variant.
    """
    from .distributed import run_on_processes
    training = LocalSGDTraining(**training)
    return run_on_processes(_train_each, tokenized_train, tokenizer, tuple(variants), training,
                            num_processes=num_processes, timeout_s=None)  # a whole training: no time limit


def synchronisations_saved(rows):
    """{K: data-parallel synchronisations / local-SGD synchronisations} from `measure_local_sgd` rows."""
    baseline = next(row["synchronisations"] for row in rows if row["local_sgd_steps"] is None)
    return {row["local_sgd_steps"]: baseline / row["synchronisations"]
            for row in rows if row["local_sgd_steps"] is not None}


def local_sgd_time_conclusion(rows, clear=0.1):
    """What the seconds of `measure_local_sgd` rows say, in words: each K's time against data-parallel
    training's, and a verdict only where every K differs by more than `clear` (a share) in the same direction.
    Each variant trained once, one after the other, so the machine's load moves the seconds too."""
    baseline = next(row["seconds"] for row in rows if row["local_sgd_steps"] is None)
    ratios = {row["local_sgd_steps"]: row["seconds"] / baseline for row in rows if row["local_sgd_steps"] is not None}
    each = ", ".join(message("K={k}: {ratio:.2f}x", k=k, ratio=ratio) for k, ratio in ratios.items())
    lines = [message("Time against data-parallel training: {each}.", each=each)]
    if all(ratio < 1 - clear for ratio in ratios.values()):
        lines.append(message("So local SGD was faster here at every K."))
    elif all(ratio > 1 + clear for ratio in ratios.values()):
        lines.append(message("So local SGD was slower here at every K."))
    else:
        lines.append(message("So the seconds show no clear difference here."))
    lines.append(message("(Each variant trained once, one after the other: on a busy machine its load moves the "
                         "seconds too.)"))
    return "\n".join(lines)


def plot_local_sgd_timeline(rows):
    """Lesson 6: one timeline per run of `measure_local_sgd`, a lane per process: each optimizer step it makes, and
    when the processes exchanged data. Data parallel: the gradients are averaged inside every step; local SGD: the
    parameters are averaged after the steps where LocalSGD did (every K-th), and once more when the with block
    ends (drawn after the last step). The averages are where the run recorded them."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from .plots import in_the_language

    colours = {"step": "#92c5de", "gradients": "#4d4d4d", "average": "#f4a582", "final": "#b2182b"}
    figure, axes = plt.subplots(len(rows), 1, figsize=(11, 1.2 + 1.1 * len(rows)), squeeze=False)
    for axis, row in zip(axes[:, 0], rows):
        steps, lanes, k = row["optimizer_steps"], range(row["processes"]), row["local_sgd_steps"]
        for lane in lanes:
            axis.broken_barh([(step - 0.9, 0.8) for step in range(1, steps + 1)], (lane - 0.3, 0.6),
                             facecolors=colours["step"])
        span = dict(ymin=-0.45, ymax=row["processes"] - 0.55)
        if k is None:
            axis.vlines([step - 0.5 for step in range(1, steps + 1)], color=colours["gradients"], linewidth=1.2, **span)
            axis.set_title(message("data parallel: the gradients averaged in every step ({count} times)",
                                   count=row["synchronisations"]), loc="left", fontsize=10)
        else:
            *every_k, final = row["average_after_steps"]
            axis.vlines(every_k, color=colours["average"], linewidth=3, **span)
            axis.vlines([final + 0.5], color=colours["final"], linewidth=3, **span)
            axis.set_title(message("local SGD, K={k}: {count} parameter averages, {every} after each K-th step and 1 "
                                   "when the with block ends", k=k, count=len(every_k) + 1, every=len(every_k)),
                           loc="left", fontsize=10)
        axis.set(xlim=(0, steps + 1), ylim=(row["processes"] - 0.5, -0.5))
        axis.set_yticks(list(lanes), [message("process {rank}", rank=lane) for lane in lanes])
        axis.tick_params(axis="x", labelbottom=axis is axes[-1, 0])
    axes[-1, 0].set_xlabel(message("optimizer step"))
    axes[-1, 0].legend(handles=[
        Patch(color=colours["step"], label=message("an optimizer step")),
        Line2D([], [], color=colours["gradients"], label=message("gradients averaged, inside the step (data parallel)")),
        Line2D([], [], color=colours["average"], linewidth=3, label=message("parameters averaged (local_sgd.step())")),
        Line2D([], [], color=colours["final"], linewidth=3, label=message("parameters averaged at the end of the with block"))],
        loc="upper center", bbox_to_anchor=(0.5, -0.45 - 0.25 / len(rows)), ncol=2, frameon=False)
    figure.tight_layout()
    return in_the_language(figure)


def saving_explanation(rows, local_sgd_steps):
    """Why local SGD with K = `local_sgd_steps` saved what it saved (rows of `measure_local_sgd`), in one line."""
    data_parallel = next(row for row in rows if row["local_sgd_steps"] is None)
    local = next(row for row in rows if row["local_sgd_steps"] == local_sgd_steps)
    return message("Data-parallel training synchronised {data_parallel} times, once per optimizer step; K = {k} "
                   "averaged {averages} times: after every {k} of the {steps} steps ({every} times), and once when "
                   "the with block ended. So {data_parallel} / {averages} = {saved} x fewer, not {k} x.",
                   data_parallel=data_parallel["synchronisations"], k=local_sgd_steps,
                   averages=local["synchronisations"], steps=local["optimizer_steps"],
                   every=local["synchronisations"] - 1,
                   saved=number(data_parallel["synchronisations"] / local["synchronisations"], ".3g"))
