"""Time a training step fairly on a busy machine: the variants take turns, then the median.

On a GPU the clock must wait for the device: CUDA (like every accelerator) runs kernels
asynchronously, and `loss.backward()` returns once its kernels are queued, not done. Without a
wait, each timed pass would be charged the unfinished work of the pass before it.
"""
import functools
import statistics
import time

import torch


def wait_for(device):
    """Block until every kernel queued on `device` has finished; on the CPU there is nothing to wait for."""
    device = torch.device(device)
    if device.type not in ("cpu", "meta"):
        torch.accelerator.synchronize(device)


def take_turns(tasks, device, repeats=3):
    """{name: [seconds of round 1, round 2, ...]}: each task of `tasks` (a name -> a function of no
    arguments) runs once per round, the tasks taking turns, so that a load that comes and goes on
    the machine hits them alike. On a GPU each run is timed from an idle device until its work has
    finished on the device. Warm up before: the first run of a setting is often slower."""
    times = {name: [] for name in tasks}
    for _ in range(repeats):
        for name, task in tasks.items():
            wait_for(device)  # nothing left over from the run before
            start = time.perf_counter()
            task()
            wait_for(device)  # backward() returns before its kernels have run
            times[name].append(time.perf_counter() - start)
    return times


def step_times(model, batch, variants, repeats=3):
    """Seconds of one forward + backward pass on `batch`, for each variant, round by round.

    `variants` maps a name to a function that returns a context manager (the setting to time,
    e.g. checkpointing on, or autocast). One warm-up pass each, then `repeats` rounds of take_turns.
    Returns {name: [seconds of round 1, round 2, ...]}.
    """
    def forward_backward(setting):
        model.zero_grad(set_to_none=True)
        with setting():
            loss = model(**batch).loss
        loss.backward()

    passes = {name: functools.partial(forward_backward, setting) for name, setting in variants.items()}
    for one_pass in passes.values():
        one_pass()  # warm-up
    times = take_turns(passes, next(model.parameters()).device, repeats)
    model.zero_grad(set_to_none=True)
    return times


def ratio_spread(times, name, baseline):
    """(median, lowest, highest) of time[name] / time[baseline], one ratio per round.

    The two variants of a round ran one right after the other, so their ratio is steadier than
    the ratio of two medians; the lowest and highest show how much it moved between rounds.
    """
    ratios = [mine / base for mine, base in zip(times[name], times[baseline])]
    return statistics.median(ratios), min(ratios), max(ratios)
