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
from dataclasses import dataclass

import torch
from accelerate import Accelerator
from accelerate.local_sgd import LocalSGD
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from tqdm.auto import tqdm

from .checks import require_positive_int
from .data import make_dataloader
from .language import message
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
