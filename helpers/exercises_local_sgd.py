"""The machinery of lesson 6's tests (local SGD): the student's loop and the course's, on the same tiny problem.

`yours_and_reference` runs in each process of `helpers.run_on_processes`: for each (K, number of
examples) it trains the tiny problem once with the student's `train_one_epoch_local_sgd` and once
with the course's `helpers.train_local_sgd`, and says what the student's run did: its parameters,
its optimizer steps and losses, the gradient all-reduces of the prepared model and how often
LocalSGD averaged the parameters.
"""
import contextlib

from accelerate import Accelerator
from accelerate.local_sgd import LocalSGD

from . import exercises
from .local_sgd import Communication, count_gradient_all_reduces, train_local_sgd
from .quiet import quiet
from .training import make_scheduler

BATCH_SIZE = 4
# SGD with a small step: averaging parameters and averaging gradients differ only by rounding,
# which a large step (0.5) lets grow past the tests' 1e-5 in four steps
LEARNING_RATE = 0.05


@contextlib.contextmanager
def counted_averages():
    """Count every parameter average of every LocalSGD made inside the block (the student makes their own)."""
    averages = []
    average = LocalSGD._sync_and_avg_model_params

    def counting_average(self):
        averages.append(self.num_steps)
        return average(self)

    LocalSGD._sync_and_avg_model_params = counting_average
    try:
        yield averages
    finally:
        LocalSGD._sync_and_avg_model_params = average


def _tiny_problem(num_examples):
    return exercises.tiny_problem(num_examples=num_examples, batch_size=BATCH_SIZE, learning_rate=LEARNING_RATE)


def _one_run(train_one_epoch_local_sgd, local_sgd_steps, num_examples, data_parallel_reference):
    with quiet():
        model, loader, optimizer = _tiny_problem(num_examples)
        accelerator = Accelerator(cpu=True)
        steps = len(loader) // accelerator.num_processes
        scheduler = make_scheduler(optimizer, steps, accelerator.num_processes)
        model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
        sent = Communication()
        count_gradient_all_reduces(model, sent)
        with counted_averages() as averages:
            losses = train_one_epoch_local_sgd(accelerator, model, optimizer, loader, scheduler, local_sgd_steps)
        reference, reference_loader, reference_optimizer = _tiny_problem(num_examples)
        reference_history, reference_sent, _ = train_local_sgd(
            reference, reference_loader, optimizer=reference_optimizer, progress=False,
            local_sgd_steps=None if data_parallel_reference else local_sgd_steps)
    return {"local_sgd_steps": local_sgd_steps, "yours": exercises.parameters_of(model),
            "reference": exercises.parameters_of(reference), "losses": len(losses),
            "optimizer_steps": optimizer.optimizer.steps, "averages": len(averages),
            "reference_steps": reference_history.optimizer_steps,
            "reference_averages": reference_sent.parameter_averages,
            "gradient_all_reduces": sent.gradient_all_reduces}


def yours_and_reference(train_one_epoch_local_sgd, runs, data_parallel_reference=False):
    """Runs in each process: for each (local_sgd_steps, num_examples) of `runs`, train the tiny problem (SGD, batches
    of 4) with `train_one_epoch_local_sgd` and with the course's loop. Returns a list of dicts, one per run: the
    parameters of both ("yours", "reference"), the number of losses and optimizer steps of the student's run and the
    optimizer steps of the course's ("reference_steps"), how often LocalSGD averaged in the student's run
    ("averages") and in the course's ("reference_averages"), and the gradient all-reduces the student's run caused. The reference is the course's LocalSGD loop with the same K, or with
    `data_parallel_reference` data-parallel training."""
    return [_one_run(train_one_epoch_local_sgd, local_sgd_steps, num_examples, data_parallel_reference)
            for local_sgd_steps, num_examples in runs]
