"""Lesson 0: from text to batches. How long `map` takes, how much of an epoch is padding, and
which examples `accelerator.prepare` gives each process. (Its exercises are checked in
helpers/exercises_data.py.)
"""
import functools
import itertools
import statistics

import torch

from .checks import require_positive_int
from .language import formatted, message, number
from .reports import table
from .timing import ratio_spread, take_turns

# The configurations of the Accelerator whose batches batches_per_process shows, in this order
SHARDING = ("default", "split_batches=True", "even_batches=False", "Accelerator(split_batches=True)")


# ---- map: one example at a time, or batched ----

def time_map(dataset, function, repeats=2, **map_arguments):
    """{"one at a time": seconds, "batched": seconds}: dataset.map(function) both ways, taking turns;
    the fastest of `repeats` runs each (the run that the machine's other work disturbed least)."""
    require_positive_int("repeats", repeats)
    seconds = take_turns({name: functools.partial(dataset.map, function, batched=batched, **map_arguments)
                          for name, batched in (("one at a time", False), ("batched", True))}, "cpu", repeats)
    return {name: min(values) for name, values in seconds.items()}


def map_conclusion(seconds):
    """A sentence on time_map's numbers, worded by what they show."""
    one, batched = seconds["one at a time"], seconds["batched"]
    ratio = one / batched
    if ratio >= 1.2:
        return message("Batched, map took {batched:.2f} s instead of {one:.2f} s: {ratio:.1f} x as fast.",
                       batched=batched, one=one, ratio=ratio)
    if ratio <= 1 / 1.2:
        return message("Batched, map took {batched:.2f} s instead of {one:.2f} s: slower this time ({ratio:.2f} x).",
                       batched=batched, one=one, ratio=ratio)
    return message("Batched, map took {batched:.2f} s instead of {one:.2f} s: about as long ({ratio:.2f} x).",
                   batched=batched, one=one, ratio=ratio)


# ---- padding: its share of an epoch, and the time of an epoch ----

def epoch_times(model, epochs, repeats=3):
    """{name: [seconds of round 1, round 2, ...]}: forward + backward over every batch of each epoch.

    `epochs` maps a name to a list of batches (dicts of tensors, with labels). The epochs take
    turns, `repeats` rounds, after one warm-up batch each, so that a load that comes and goes on
    the machine hits them alike. No optimizer step: every epoch starts from the same weights.
    """
    require_positive_int("repeats", repeats)
    model.train()
    device = next(model.parameters()).device

    def forward_backward(batch):
        model.zero_grad(set_to_none=True)
        model(**{key: value.to(device) for key, value in batch.items()}).loss.backward()

    def epoch(batches):
        for batch in batches:
            forward_backward(batch)

    for batches in epochs.values():
        forward_backward(batches[0])  # warm-up
    times = take_turns({name: functools.partial(epoch, batches) for name, batches in epochs.items()}, device, repeats)
    model.zero_grad(set_to_none=True)
    return times


def percent(share):
    """A share between 0 and 1 as a percentage, written as the language writes it ("51.7 %"; id: "51,7%")."""
    return message("{percent:.1f} %", percent=100 * share)


def padding_table(fractions, times):
    """Each strategy's padding and epoch time, against the first strategy (names: the lesson's, translated there)."""
    baseline = next(iter(times))
    rows = []
    for name, fraction in fractions.items():
        ratio, low, high = ratio_spread(times, name, baseline)
        rows.append([name, percent(fraction), number(statistics.median(times[name]), ".3f"),
                     formatted("{ratio:.2f} x ({low:.2f}-{high:.2f})", ratio=ratio, low=low, high=high)])
    return table([message("padding"), message("padding tokens"), message("epoch s"),
                  message("of the first (lowest to highest)")], rows)


def padding_conclusions(fractions, times):
    """One sentence per strategy after the first: its padding and its time against the first, worded
    by the numbers (less time only when every round took less; more only when every round took more);
    then the order of the strategies by padding and by time. The strategies come from the most
    padding to the least, which holds for any data: shares out of that order, or not between 0 and
    1, are not a measurement, and the sentences say so instead (the student's padding_fraction)."""
    names = list(fractions)
    shares = list(fractions.values())
    if any(not 0 <= share <= 1 for share in shares) or shares != sorted(shares, reverse=True):
        return message("These shares of padding are not possible: {shares}. Padding to max_length leaves the most "
                       "padding and batches of similar lengths the least, whatever the data: look at your "
                       "padding_fraction (exercise 2) again.",
                       shares=", ".join(name + " " + percent(share) for name, share in fractions.items()))
    first = names[0]
    lines = []
    for name in names[1:]:
        ratio, low, high = ratio_spread(times, name, first)
        values = dict(name=name, first=first, fraction=100 * fractions[name],
                      first_fraction=100 * fractions[first], ratio=ratio, low=low, high=high)
        if high < 1:
            lines.append(message("{name}: {fraction:.1f} % padding instead of {first_fraction:.1f} % ({first}); "
                                 "the epoch took less time: {ratio:.2f} x ({low:.2f} to {high:.2f}).", **values))
        elif low > 1:
            lines.append(message("{name}: {fraction:.1f} % padding instead of {first_fraction:.1f} % ({first}); "
                                 "the epoch took more time: {ratio:.2f} x ({low:.2f} to {high:.2f}).", **values))
        else:
            lines.append(message("{name}: {fraction:.1f} % padding instead of {first_fraction:.1f} % ({first}); "
                                 "no clear difference in time: {ratio:.2f} x ({low:.2f} to {high:.2f}).", **values))
    by_time = sorted(names, key=lambda name: statistics.median(times[name]), reverse=True)
    if by_time == names:
        lines.append(message("The less padding, the shorter the epoch: the times are in the same order as the padding."))
    else:
        lines.append(message("By time, from the longest epoch to the shortest: {order}; not the order of the padding.",
                             order=", ".join(by_time)))
    return "\n".join(lines)


def dynamic_padding_explanation(batches):
    """What the padding of dynamically padded `batches` comes from (the line beside a student's
    prediction): the mean length of a pair against the mean length of its batch, its longest pair."""
    rows = sum(len(batch["attention_mask"]) for batch in batches)
    real = sum(int(batch["attention_mask"].sum()) for batch in batches) / rows
    padded = sum(batch["attention_mask"].numel() for batch in batches) / rows
    return message("Each batch is padded to its own longest pair: a pair has {real:.1f} tokens on average, the "
                   "longest pair of its batch {padded:.1f}; the difference, {share} of the positions, is padding.",
                   real=real, padded=padded, share=percent(1 - real / padded))


def lengths_summary(lengths):
    """A sentence on the number of tokens of the pairs: the shortest, the median and the longest."""
    return message("The pairs have {low} to {high} tokens (median {median:g}, mean {mean:.1f}).",
                   low=min(lengths), high=max(lengths), median=statistics.median(lengths), mean=statistics.mean(lengths))


def plot_padding(fractions, times):
    """The share of padding and the time of an epoch, per strategy (time: median, bars from lowest to highest).
    The strategies' names are the lesson's (written with helpers.message there)."""
    import matplotlib.pyplot as plt

    from .plots import in_the_language

    names = list(fractions)
    medians = [statistics.median(seconds) for seconds in times.values()]
    spread = [[m - min(s) for m, s in zip(medians, times.values())],
              [max(s) - m for m, s in zip(medians, times.values())]]
    figure, (padding_axis, time_axis) = plt.subplots(1, 2, figsize=(11, 3.8))
    padding_axis.barh(names, [100 * fraction for fraction in fractions.values()])
    time_axis.barh(names, medians, xerr=spread, capsize=4)
    for axis in (padding_axis, time_axis):
        axis.invert_yaxis()  # the first strategy on top
        axis.grid(alpha=0.3, axis="x")
    time_axis.tick_params(labelleft=False)
    padding_axis.set(title=message("Padding tokens in an epoch"), xlabel=message("% of the tokens"))
    time_axis.set(title=message("Forward + backward over an epoch"), xlabel=message("seconds"))
    figure.tight_layout()
    return in_the_language(figure)


def plot_padded_batches(epochs):
    """Each strategy's epoch as the model computes it: a row per pair, in the order of the batches, a
    column per position; dark: a real token, light: padding (computed, then ignored by the mask),
    white: no position at all (the batch is shorter). Lines separate the batches. `epochs` maps a
    strategy (the lesson's name) to its batches."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from .plots import in_the_language

    colours = ["white", "#f4a582", "#2166ac"]  # no position, padding, a real token
    width = max(batch["attention_mask"].shape[1] for batches in epochs.values() for batch in batches)
    figure, axes = plt.subplots(1, len(epochs), figsize=(3.2 * len(epochs), 4.2), sharey=True, squeeze=False)
    for axis, (name, batches) in zip(axes[0], epochs.items()):
        masks = [torch.nn.functional.pad(batch["attention_mask"], (0, width - batch["attention_mask"].shape[1]),
                                         value=-1) for batch in batches]
        axis.imshow(torch.cat(masks), aspect="auto", interpolation="nearest", cmap=ListedColormap(colours),
                    vmin=-1, vmax=1)
        for row in itertools.accumulate(len(mask) for mask in masks[:-1]):
            axis.axhline(row - 0.5, color="black", linewidth=0.6)
        axis.set(title=name, xlabel=message("position (token)"))
    axes[0][0].set_ylabel(message("pair, batch after batch"))
    figure.legend(handles=[Patch(color=colours[2], label=message("real token")),
                           Patch(color=colours[1], label=message("padding: computed, then ignored"))],
                  loc="lower center", ncol=2)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return in_the_language(figure)


# ---- what accelerator.prepare gives each process ----

def _batches_seen(num_examples, batch_size):
    """Runs in each process: the batches (example numbers) that a prepared DataLoader gives it, per configuration."""
    from accelerate import Accelerator, DataLoaderConfiguration
    from accelerate.utils import gather_object

    seen = {}
    for name in SHARDING:
        if name == "Accelerator(split_batches=True)":
            accelerator = Accelerator(cpu=True, split_batches=True)
        else:
            options = {"split_batches=True": {"split_batches": True},
                       "even_batches=False": {"even_batches": False}}.get(name, {})
            accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(**options))
        loader = accelerator.prepare(torch.utils.data.DataLoader(list(range(num_examples)), batch_size=batch_size))
        mine = [batch.tolist() for batch in loader]
        seen[name] = gather_object([mine])  # [process 0's batches, process 1's batches, ...]
    return seen


def batches_per_process(num_examples, batch_size, num_processes=2):
    """{configuration: [batches of process 0, batches of process 1, ...]}: a DataLoader over the example
    numbers 0 .. num_examples - 1, in order, prepared in `num_processes` real processes (gloo on the CPU)."""
    from .distributed import run_on_processes

    require_positive_int("num_examples", num_examples)
    require_positive_int("batch_size", batch_size)
    return run_on_processes(_batches_seen, num_examples, batch_size, num_processes=num_processes)


def repeated_examples(batches_of_processes, num_examples):
    """The example numbers that the processes got more than once, all together, in order."""
    counts = [0] * num_examples
    for batches in batches_of_processes:
        for batch in batches:
            for example in batch:
                counts[example] += 1
    return [example for example, count in enumerate(counts) if count > 1]


def process_batches_table(seen, num_examples):
    """Per configuration and process: the batches it got; then the examples seen twice."""
    rows = []
    for name, processes in seen.items():
        for process, batches in enumerate(processes):
            label = message("default") if name == SHARDING[0] else name  # the others are code
            rows.append([label if process == 0 else "", process, " ".join(str(batch) for batch in batches)])
        rows.append(["", "", message("more than once: {examples}",
                                     examples=repeated_examples(processes, num_examples) or message("none"))])
    return table([message("configuration"), message("process"), message("its batches (example numbers)")], rows)
