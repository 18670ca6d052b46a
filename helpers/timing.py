"""Time a training step fairly on a busy machine: the variants take turns, then the median."""
import statistics
import time


def step_times(model, batch, variants, repeats=3):
    """Seconds of one forward + backward pass on `batch`, for each variant, round by round.

    `variants` maps a name to a function that returns a context manager (the setting to time,
    e.g. checkpointing on, or autocast). The variants take turns, `repeats` times each after one
    warm-up pass, so a load that comes and goes on the machine hits them alike.
    Returns {name: [seconds of round 1, round 2, ...]}.
    """
    times = {name: [] for name in variants}
    for round_ in range(repeats + 1):
        for name, setting in variants.items():
            model.zero_grad(set_to_none=True)
            start = time.perf_counter()
            with setting():
                loss = model(**batch).loss
            loss.backward()
            if round_:  # the first round warms up
                times[name].append(time.perf_counter() - start)
    model.zero_grad(set_to_none=True)
    return times


def ratio_spread(times, name, baseline):
    """(median, lowest, highest) of time[name] / time[baseline], one ratio per round.

    The two variants of a round ran one right after the other, so their ratio is steadier than
    the ratio of two medians; the lowest and highest show how much it moved between rounds.
    """
    ratios = [mine / base for mine, base in zip(times[name], times[baseline])]
    return statistics.median(ratios), min(ratios), max(ratios)
