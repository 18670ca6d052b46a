"""Time a training step fairly on a busy machine: the variants take turns, then the median."""
import contextlib
import statistics
import time


def step_seconds(model, batch, variants, repeats=3):
    """Median seconds of one forward + backward pass on `batch`, for each variant.

    `variants` maps a name to a function that returns a context manager (the setting to time,
    e.g. checkpointing on, or autocast). The variants take turns, `repeats` times each after one
    warm-up pass, so a load that comes and goes on the machine hits them alike.
    Returns {name: seconds}.
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
    return {name: statistics.median(values) for name, values in times.items()}


def as_is():
    """The setting that changes nothing (the baseline variant)."""
    return contextlib.nullcontext()
