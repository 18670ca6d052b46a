"""Save a run and resume it: `accelerator.save_state` / `load_state`, `skip_first_batches`, and the Trainer.

A checkpoint must hold everything the next step depends on: the weights, the optimizer's
moments, the scheduler's position, the random number generators (dropout) and how far the run
got. `Accelerator.save_state` saves the first four (and objects registered with
`register_for_checkpointing`); the data order is the loop's job: each epoch's order depends only
on the seed and the epoch (`set_epoch`), and `skip_first_batches` skips what the interrupted
run already trained on. Then an interrupted and resumed run ends with exactly the same weights
as one that was not interrupted (tests/test_resume.py).
"""
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from tqdm.auto import tqdm
from transformers import TrainerCallback

from .checks import require_positive_int
from .language import message
from .training import History, fresh_accelerator_state, make_scheduler, parameter_difference, parameters_of


class TrainingProgress:
    """How many optimizer steps a run has made; saved with the checkpoint."""

    def __init__(self):
        self.completed_steps = 0

    def state_dict(self):
        return {"completed_steps": self.completed_steps}

    def load_state_dict(self, state):
        self.completed_steps = state["completed_steps"]


def resume_point(completed_steps, batches_per_epoch):
    """(epoch to continue in, batches of that epoch already trained on), one optimizer step per batch."""
    return divmod(completed_steps, batches_per_epoch)


def resumed_batches_problem(batches, stop_after, batches_per_epoch, epochs):
    """None when a run stopped after `stop_after` steps and resumed trained the `batches` batches it had left;
    else a message with the cause that gives that count (lesson 9's test of resume_training)."""
    total = batches_per_epoch * epochs
    expected = total - stop_after
    if batches == expected:
        return None
    first_epoch, done = divmod(stop_after, batches_per_epoch)
    causes = [
        (total, message("Your run trained every batch again: load the checkpoint before the loop (the "
                        "Accelerator's counterpart of save_state), then start where resume_point says.")),
        (expected + done, message("The {done} batches of epoch {epoch} that the run had done were trained again: "
                                  "in the epoch you resume in, loop over accelerator.skip_first_batches(...).",
                                  done=done, epoch=first_epoch)),
        (expected - (epochs - first_epoch - 1) * done, message(
            "You skipped the first batches of every epoch: skip them in the epoch you resume in only; the epochs "
            "after it start at their first batch.")),
        (total - done, message("Your run went through every epoch from 0: start at the epoch resume_point gives.")),
    ]
    cause = next((text for count, text in causes if count == batches), "")
    return message("Stopped after {stop} of {total} steps ({per_epoch} batches per epoch), your resumed run trained "
                   "{batches} batches; it should train the {expected} left. {cause}", stop=stop_after, total=total,
                   per_epoch=batches_per_epoch, batches=batches, expected=expected, cause=cause).strip()


def prepare_resumable(model, dataloader, optimizer, epochs, data_seed=0):
    """An Accelerator and the prepared objects for a run that can be saved and resumed.

    Returns (accelerator, model, optimizer, dataloader, scheduler, progress); `progress` (a
    TrainingProgress) is registered, so `save_state` / `load_state` keep the step count too.
    """
    # the seedable sampler orders each epoch by (data_seed, epoch): a resumed run repeats that order.
    # Without data_seed it takes torch's global seed at prepare time, which a new process does not share.
    accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(
        use_seedable_sampler=True, data_seed=data_seed))
    scheduler = make_scheduler(optimizer, len(dataloader) * epochs)
    model, optimizer, dataloader, scheduler = accelerator.prepare(model, optimizer, dataloader, scheduler)
    progress = TrainingProgress()
    accelerator.register_for_checkpointing(progress)
    return accelerator, model, optimizer, dataloader, scheduler, progress


@dataclass(frozen=True)
class ResumePlan:
    """When a resumable run saves, stops and resumes: the keywords of `train_resumable`."""
    save_every: int | None = None  # save the whole state every n optimizer steps
    stop_after: int | None = None  # stop after n optimizer steps, as if the machine went down
    resume: bool = False           # first load the state from checkpoint_dir ...
    skip_batches: bool = True      # ... then skip the batches already seen (False: what goes wrong without)
    data_seed: int = 0             # fixes the order of every epoch

    def __post_init__(self):
        for name in ("save_every", "stop_after"):
            if getattr(self, name) is not None:
                require_positive_int(name, getattr(self, name))


def train_resumable(model, dataloader, *, checkpoint_dir, epochs=1, learning_rate=5e-4, optimizer=None,
                    progress=True, **plan):
    """Train with an Accelerator, saving the whole state to `checkpoint_dir` as `plan` says.

    plan: the keywords of `ResumePlan` (save_every=n, stop_after=n, resume=True, skip_batches=False,
    data_seed). `dataloader` must be shuffled with a generator (helpers.make_dataloader(...,
    shuffle=True)) or not at all; `data_seed` fixes the order of every epoch. One process.
    Returns (History, the Accelerator).
    """
    require_positive_int("epochs", epochs)
    plan = ResumePlan(**plan)
    optimizer = optimizer or torch.optim.AdamW(model.parameters(), lr=learning_rate)
    accelerator, model, optimizer, dataloader, scheduler, run = prepare_resumable(
        model, dataloader, optimizer, epochs, plan.data_seed)
    if plan.resume:
        accelerator.load_state(checkpoint_dir)
    first_epoch, done_in_epoch = resume_point(run.completed_steps, len(dataloader))
    history, start = History(), time.perf_counter()
    model.train()
    show = progress and accelerator.is_local_main_process
    with tqdm(total=len(dataloader) * epochs, initial=run.completed_steps, desc="train_resumable",
              unit="step", disable=not show) as bar:
        for epoch in range(first_epoch, epochs):
            dataloader.set_epoch(epoch)
            batches = dataloader
            if epoch == first_epoch and done_in_epoch and plan.skip_batches:
                batches = accelerator.skip_first_batches(dataloader, done_in_epoch)
            for batch in batches:
                history.learning_rate.append(scheduler.get_last_lr()[0])
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                run.completed_steps += 1
                history.loss.append(loss.item())
                bar.update()
                if plan.save_every and run.completed_steps % plan.save_every == 0:
                    accelerator.save_state(checkpoint_dir)
                if run.completed_steps == plan.stop_after:
                    history.seconds = time.perf_counter() - start
                    return history, accelerator
    history.seconds = time.perf_counter() - start
    return history, accelerator


def checkpoint_explained(checkpoint):
    """What makes a checkpoint ({file: bytes}, `checkpoint_bytes`) the size it is, in sizes of its weights."""
    model = checkpoint["model.safetensors"]
    rest = sum(size for name, size in checkpoint.items() if name not in ("model.safetensors", "optimizer.bin"))
    return message("The weights (model.safetensors) are 1 model size; AdamW's two moments (optimizer.bin) {optimizer:.2f}, "
                   "one per weight each; the scheduler, the random states and your progress together {rest:,} bytes "
                   "({rest_share:.3f}): {total:.2f} model sizes.", optimizer=checkpoint.get("optimizer.bin", 0) / model,
                   rest=rest, rest_share=rest / model, total=sum(checkpoint.values()) / model)


def checkpoint_bytes(checkpoint_dir):
    """{file name: bytes} of a checkpoint folder written by `accelerator.save_state` or the Trainer."""
    return {path.name: path.stat().st_size for path in sorted(Path(checkpoint_dir).iterdir()) if path.is_file()}


class StopAfterSteps(TrainerCallback):
    """Stops a Trainer after `steps` optimizer steps, as if the machine went down."""

    def __init__(self, steps):
        self.steps = require_positive_int("steps", steps)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.steps:
            control.should_training_stop = True
        return control


def measure_resume(tokenized_train, tokenizer, folder, *, model_name=None, batch_size=8, epochs=2,
                   learning_rate=5e-4, **crash):
    """Train once without a break, and twice interrupted after `stop_after` steps and resumed from the
    last checkpoint (saved every `save_every` steps): with and without skip_first_batches.

    crash: stop_after (10) and save_every (5), as in `ResumePlan`.
    Returns (rows, checkpoint): a row per run (its name, optimizer steps, loss per step, and the
    largest weight difference to the uninterrupted run) and {file: bytes} of the checkpoint.
    """
    unknown = sorted(set(crash) - {"stop_after", "save_every"})
    if unknown:
        raise TypeError(f"measure_resume() got unexpected keyword arguments {unknown}")
    crash = ResumePlan(**{"stop_after": 10, "save_every": 5, **crash})
    stop_after, save_every = crash.stop_after, crash.save_every
    from .data import make_dataloader
    from .modeling import load_model
    from .quiet import quiet

    def run(checkpoint_dir, **options):
        fresh_accelerator_state()
        torch.manual_seed(0)
        with quiet():
            model = load_model(model_name)
        loader = make_dataloader(tokenized_train, tokenizer, batch_size, shuffle=True)
        history, _ = train_resumable(model, loader, checkpoint_dir=checkpoint_dir, epochs=epochs,
                                     learning_rate=learning_rate, progress=False, **options)
        return parameters_of(model), history

    folder = Path(folder)
    whole, whole_history = run(folder / "uninterrupted")
    rows = [{"run": "uninterrupted", "optimizer_steps": whole_history.optimizer_steps,
             "loss": whole_history.loss, "max_weight_difference": 0.0}]
    checkpoint_dir = folder / "interrupted"
    _, before = run(checkpoint_dir, save_every=save_every, stop_after=stop_after)
    saved_steps = stop_after - stop_after % save_every  # the run goes on from its last checkpoint
    for name, options in (("resumed", {}), ("resumed without skip_first_batches", {"skip_batches": False})):
        torch.manual_seed(1)  # as in a new process: another global random state
        parameters, after = run(checkpoint_dir, resume=True, **options)  # reads the checkpoint only
        rows.append({"run": name, "optimizer_steps": saved_steps + after.optimizer_steps,
                     "loss": before.loss[:saved_steps] + after.loss,
                     "max_weight_difference": parameter_difference(whole, parameters)})
    return rows, checkpoint_bytes(checkpoint_dir)
