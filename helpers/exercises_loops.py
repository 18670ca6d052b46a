"""The checks of lessons 1 and 2's exercises (the scheduler of the training loop, Accelerate's
prepare, the attention mask): each says what is wrong with an answer, or None where it is right
(forgot_attention_mask: True where it is wrong). Lessons call them through `helpers.exercises`,
which imports them (exercises.scheduler_problem), as the guard protects them there.
"""
import math

import torch

from .language import message
from .training import make_scheduler


def forgot_attention_mask(calls):
    """True when some recorded model call had no attention_mask."""
    return any("attention_mask" not in call["keywords"] for call in calls)


def prepare_problem(seen, prepared, dataloader, validation_loader, cpu):
    """None when lesson 2's prepare_for_training did its work: one Accelerator(device_placement=True, cpu=cpu),
    one prepare(...) of the five objects, and the prepared five returned in the order of the arguments
    (`seen`: what spy_on_accelerator saw; `prepared`: what the function returned; `dataloader` and
    `validation_loader`: the two loaders it got, of different lengths). Else what is wrong."""
    if len(seen["created"]) != 1:
        return message("Accelerator(...) was created {created} times; create it once.", created=len(seen["created"]))
    if seen["created"][0].get("device_placement", True) is not True:
        return message("Create the Accelerator with device_placement=True: it puts the model and every batch on "
                       "the device for you.")
    if seen["created"][0].get("cpu", False) is not cpu:
        return message("prepare_for_training got cpu={cpu}, but created Accelerator(cpu={given}): pass cpu=cpu to "
                       "the Accelerator.", cpu=cpu, given=seen["created"][0].get("cpu", False))
    if not isinstance(prepared, tuple) or len(prepared) != 6:
        return message("prepare_for_training should return 6 things: the Accelerator and the five prepared objects.")
    accelerator, model, optimizer, train_loader, scheduler, validation = prepared
    names = {"AcceleratedOptimizer": message("the optimizer"), "AcceleratedScheduler": message("the scheduler")}
    for got, wanted in [(optimizer, "AcceleratedOptimizer"), (scheduler, "AcceleratedScheduler")]:
        if type(got).__name__ != wanted:
            return message("In the place of {what} you return a {kind}, not the prepared {wanted}: return what "
                           "accelerator.prepare gave back, in the order of the arguments.",
                           what=names[wanted], kind=type(got).__name__, wanted=wanted)
    for got, given, what in [(train_loader, dataloader, message("the dataloader")),
                             (validation, validation_loader, message("the validation loader"))]:
        if got is given or not type(got).__name__.startswith("DataLoader"):
            return message("In the place of {what} you return {kind}, not a prepared dataloader: an unprepared one "
                           "gives its batches on the CPU, even when the model is on a GPU. Prepare it and return "
                           "what accelerator.prepare gave back.", what=what,
                           kind=message("the one you were given") if got is given else type(got).__name__)
    if (len(train_loader), len(validation)) != (len(dataloader), len(validation_loader)):
        return message("The two dataloaders are swapped: you return a dataloader of {got} batches in the place of "
                       "the one of {wanted}. accelerator.prepare gives back its objects in the order it got them.",
                       got=len(train_loader), wanted=len(dataloader))
    if seen["prepared"] != [5]:
        return message("accelerator.prepare was called with {prepared} objects; call it once, with the model, the "
                       "optimizer, the dataloader, the scheduler and the validation loader.",
                       prepared=seen["prepared"])
    return None


def learning_rates(scheduler, steps):
    """The learning rate of each of the first `steps` optimizer steps under `scheduler`."""
    rates = []
    for _ in range(steps):
        rates.append(scheduler.get_last_lr()[0])
        scheduler.optimizer.step()
        scheduler.step()
    return rates


def schedule_mismatch(scheduler, num_training_steps):
    """None when `scheduler` follows the course's schedule over `num_training_steps` steps; else why not.

    The course's schedule: linear warm-up over int(num_training_steps * 0.1) steps, then linear
    decay to 0 at step num_training_steps (see `helpers.make_scheduler`).
    """
    if scheduler is None:
        return message("The function returned None; return the scheduler.")
    base_lr = scheduler.base_lrs[0]
    probe = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=base_lr)
    expected = learning_rates(make_scheduler(probe, num_training_steps), num_training_steps + 1)
    got = learning_rates(scheduler, num_training_steps + 1)
    warmup = int(num_training_steps * 0.1)
    for step, (mine, right) in enumerate(zip(got, expected)):
        if abs(mine - right) > 1e-9 * base_lr:
            return message("At step {step} the learning rate is {mine:.3f} x lr; it should be {right:.3f} x lr "
                           "(num_training_steps = {num_training_steps}, num_warmup_steps = {warmup}).",
                           step=step, mine=mine / base_lr, right=right / base_lr,
                           num_training_steps=num_training_steps, warmup=warmup)
    return None


def _schedule_shape(scheduler, longest):
    """(steps until the learning rate reaches 0, or None; steps before it first reaches its top) of a
    scheduler, over at most `longest` steps."""
    rates = learning_rates(scheduler, longest)
    top = max(rates)
    warmup = next(step for step, rate in enumerate(rates) if rate >= top * (1 - 1e-9))
    length = next((step for step, rate in enumerate(rates) if step > warmup and rate <= 1e-12 * top), None)
    return length, warmup


def scheduler_problem(make_lr_scheduler, num_examples, batch_size, epochs):
    """None when make_lr_scheduler(optimizer, num_examples, batch_size, epochs) gives the slides' schedule for
    that run (lesson 1, exercise 1); else what is wrong, naming the slip that its length or warm-up shows:
    the last, shorter batch left out, one epoch only, rounded up once for the whole run, the warm-up."""
    num_batches = math.ceil(num_examples / batch_size)
    steps = num_batches * epochs
    warmup = int(steps * 0.1)

    def schedule():
        probe = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        return make_lr_scheduler(probe, num_examples, batch_size, epochs)

    scheduler = schedule()
    if scheduler is None:
        return message("The function returned None; return the scheduler.")
    length, got_warmup = _schedule_shape(scheduler, 4 * steps + 20)
    values = dict(length=length, steps=steps, num_batches=num_batches, epochs=epochs, num_examples=num_examples,
                  batch_size=batch_size, last=num_examples - (num_batches - 1) * batch_size, warmup=warmup,
                  got_warmup=got_warmup)
    if length is not None and length != steps:
        if length == num_examples // batch_size * epochs:
            return message("Your schedule ends after {length} steps; it should end after {steps}. {num_examples} pairs "
                           "in batches of {batch_size} are {num_batches} batches per epoch, the last of {last} pairs: "
                           "the last, shorter batch is an optimizer step too, so round the division up, not down.",
                           **values)
        if length == num_batches:
            return message("Your schedule ends after {length} steps, the batches of one epoch; the run has {epochs} "
                           "epochs of {num_batches} batches: {steps} steps.", **values)
        if length == math.ceil(num_examples * epochs / batch_size):
            return message("Your schedule ends after {length} steps; it should end after {steps}. You rounded up once "
                           "for the whole run, but every epoch ends with its own shorter batch (of {last} pairs): "
                           "count the batches of one epoch, then multiply by the epochs.", **values)
    elif length == steps and got_warmup != warmup:
        if got_warmup == 0:
            return message("Your schedule has no warm-up: its first step has the full learning rate. The slides warm "
                           "up for a tenth of the {steps} steps, rounded down: {warmup} steps.", **values)
        return message("Your warm-up takes {got_warmup} steps; the slides' takes a tenth of the {steps} steps, "
                       "rounded down (int, not round or ceil): {warmup} steps.", **values)
    return schedule_mismatch(schedule(), steps)
