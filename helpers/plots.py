"""Pictures of training: loss, validation accuracy and learning rate; the files of a checkpoint."""
import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import Formatter, ScalarFormatter

from .language import current_language, message, number, translated
from .reports import mode_name, run_name

DECIMAL = re.compile(r"\d+\.\d+")  # a number as a tick label writes it: 0.25, 1.0, the 1.5 of 1.5e−3


def running_mean(values, window):
    """The mean of each value and the up to `window - 1` values before it (a smooth curve)."""
    values = np.asarray(values, dtype=float)
    sums = np.cumsum(np.insert(values, 0, 0.0))
    starts = np.maximum(np.arange(1, len(values) + 1) - window, 0)
    return (sums[1:] - sums[starts]) / (np.arange(1, len(values) + 1) - starts)


def plot_history(histories, title="Training", validation_accuracy=None, majority_class=None):
    """Plot what training did; `histories` maps a label to a History (or is one History).

    Panels: the training loss per optimizer step (faint) with its running mean (a step's loss
    is noisy: it comes from a few examples); with `validation_accuracy`, the accuracy on the
    validation split before training and after every epoch (a list, or a dict with the same
    labels as `histories`), and with `majority_class` (see `majority_class_accuracy`) a dashed
    line at the accuracy of always giving the most common answer; and the learning rate per
    optimizer step. Titles, labels and the names of `histories` show in the course's language
    (helpers.use_language); a lesson's own title and names are in the catalog of helpers' messages.
    """
    if majority_class is not None and validation_accuracy is None:
        raise ValueError("plot_history(majority_class=...) draws in the accuracy panel: pass validation_accuracy too")
    if not isinstance(histories, dict):
        histories = {message("training"): histories}
    histories = {message(label): history for label, history in histories.items()}
    if validation_accuracy is not None and not isinstance(validation_accuracy, dict):
        validation_accuracy = {label: validation_accuracy for label in histories}
    if validation_accuracy is not None:
        validation_accuracy = {message(label): accuracy for label, accuracy in validation_accuracy.items()}
    panels = 3 if validation_accuracy else 2
    figure, axes = plt.subplots(1, panels, figsize=(4.5 * panels, 3.5))
    loss_axis, lr_axis = axes[0], axes[-1]
    for index, (label, history) in enumerate(histories.items()):
        color = f"C{index}"
        steps = np.arange(1, history.optimizer_steps + 1)
        window = max(1, history.optimizer_steps // 10)
        loss_axis.plot(steps, history.loss, color=color, alpha=0.3, linewidth=1)
        loss_axis.plot(steps, running_mean(history.loss, window), color=color, label=label)
        lr_axis.plot(steps, history.learning_rate, color=color, label=label)
        if validation_accuracy and label in validation_accuracy:
            accuracy = validation_accuracy[label]
            axes[1].plot(range(len(accuracy)), accuracy, color=color, marker="o", label=label)
    loss_axis.set(title=message("Training loss (faint) and its running mean"), xlabel=message("optimizer step"),
                  ylabel=message("loss"), ylim=(0, None))
    lr_axis.set(title=message("Learning rate"), xlabel=message("optimizer step"), ylabel=message("learning rate"),
                ylim=(0, None))
    if validation_accuracy:
        epochs = max(len(accuracy) for accuracy in validation_accuracy.values()) - 1
        if majority_class is not None:
            axes[1].axhline(majority_class, color="gray", linestyle="--",
                            label=message("always the most common answer ({accuracy:.2f})", accuracy=majority_class))
        axes[1].set(title=message("Validation accuracy"), xlabel=message("epoch (0: before training)"),
                    ylabel=message("accuracy"),
                    ylim=(0, 1.05), yticks=np.linspace(0, 1, 6), xticks=range(epochs + 1))  # room for dots at 1
    for axis in axes:
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    figure.suptitle(message(title))
    figure.tight_layout()
    return in_the_language(figure)


class LocalTicks(Formatter):
    """Matplotlib's own tick labels (which ticks, how many decimals, the offset) written with the course's
    decimal symbol: 0,25 in Dutch and Indonesian."""

    def __init__(self, english, language):
        self.english, self.language = english, language

    def set_axis(self, axis):
        super().set_axis(axis)
        self.english.set_axis(axis)

    def set_locs(self, locs):
        super().set_locs(locs)
        self.english.set_locs(locs)

    def __call__(self, x, pos=None):
        return local_decimals(self.english(x, pos), self.language)

    def get_offset(self):
        return local_decimals(self.english.get_offset(), self.language)

    def format_data_short(self, value):
        return local_decimals(self.english.format_data_short(value), self.language)


def local_decimals(text, language=None):
    """`text` with each decimal number in it (1.25) written in `language` (1,25 in nl and id)."""
    return DECIMAL.sub(lambda found: number(float(found.group()), f".{len(found.group().split('.')[1])}f", language),
                       text)


def in_the_language(figure):
    """`figure`, whose number axes label their ticks in the course's language (English: as matplotlib does)."""
    if translated():
        for axis in figure.axes:
            for side in (axis.xaxis, axis.yaxis):
                if isinstance(side.get_major_formatter(), ScalarFormatter):
                    side.set_major_formatter(LocalTicks(side.get_major_formatter(), current_language()))
    return figure


def readable_bytes(size):
    """12 B, 3.4 kB, 1.2 MB, 5.0 GB: a size in bytes as people read it (powers of 1000)."""
    for unit in ("B", "kB", "MB"):
        if size < 1000:
            return f"{number(size, '.0f')} {unit}" if unit == "B" else f"{number(size, '.1f')} {unit}"
        size /= 1000
    return f"{number(size, '.1f')} GB"


def plot_file_sizes(sizes, axis):
    """Draw {file name: bytes} as horizontal bars on `axis`, each labelled with its size.

    The axis is logarithmic, so that a file of a few bytes shows next to one of megabytes.
    """
    names = list(sizes)
    axis.barh(names, [sizes[name] for name in names])
    axis.invert_yaxis()  # the first file on top
    axis.set_xscale("log")
    for row, name in enumerate(names):
        axis.annotate(readable_bytes(sizes[name]), (sizes[name], row), xytext=(4, 0), textcoords="offset points",
                      va="center", fontsize="small")
    axis.set_xlim(0.5, max(sizes.values()) * 30)  # room for the last label
    axis.set(title=message("What the checkpoint holds"), xlabel=message("bytes (logarithmic axis)"))
    axis.grid(alpha=0.3, axis="x")


def plot_peak_memory(micro_batches, peaks, effective_batch):
    """Lesson 3: the peak memory of training with each micro-batch size, for the same effective batch."""
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(micro_batches, peaks, marker="o")
    axis.set(xscale="log", ylim=(0, 1.1 * max(peaks)),
             xlabel=message("micro-batch size (examples per forward pass)"),
             ylabel=message("peak training memory (MiB)"),
             title=message("Effective batch {effective_batch}: smaller micro-batches need less memory",
                           effective_batch=effective_batch))
    axis.set_xticks(micro_batches, labels=micro_batches, minor=False)
    axis.minorticks_off()  # no extra labels such as 2x10^1 between the sizes
    axis.grid(alpha=0.3)
    return in_the_language(figure)


def plot_ease_and_control(ways):
    """Lesson 4: {way of training: (ease of use, control)} as points, each named."""
    figure, axis = plt.subplots(figsize=(4.5, 3.5))
    for name, (ease, control) in ways.items():
        axis.scatter(ease, control, s=200)
        axis.annotate(name, (ease, control), textcoords="offset points", xytext=(0, 12), ha="center")
    axis.set(xlabel=message("ease of use"), ylabel=message("control (customisation)"), xlim=(0.3, 3.7),
             ylim=(0.3, 3.7), xticks=[], yticks=[], title=message("PyTorch, Accelerator and Trainer"))
    return in_the_language(figure)


def plot_checkpointing(rows):
    """Lesson 5: peak memory of a training step and time of a forward and backward pass, without and with
    checkpointing, per batch size."""
    sizes = [row["batch_size"] for row in rows]
    figure, (memory_axis, time_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    for key, label in (("", message("without checkpointing")), ("_checkpointed", message("with checkpointing"))):
        memory_axis.plot(sizes, [row["peak_mib" + key] for row in rows], marker="o", label=label)
        time_axis.plot(sizes, [row["seconds" + key] * 1000 for row in rows], marker="o", label=label)
    memory_axis.set(xlabel=message("batch size"), ylabel=message("peak training memory (MiB)"),
                    title=message("What it buys: memory"))
    time_axis.set(xlabel=message("batch size"), ylabel=message("forward + backward (ms)"),
                  title=message("What it costs: time"))
    for axis in (memory_axis, time_axis):
        axis.set_xscale("log", base=2)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    return in_the_language(figure)


def plot_local_sgd(rows):
    """Lesson 6: the training loss of each run of measure_local_sgd, and how often its processes talked."""
    figure, (loss_axis, sync_axis) = plt.subplots(1, 2, figsize=(12, 3.5))  # room for a longer translated title
    for row in rows:
        k = row["local_sgd_steps"]
        label = message("data parallel") if k is None else message("local SGD, K={k}", k=k)
        loss_axis.plot(range(1, row["optimizer_steps"] + 1), row["loss"], label=label)
        sync_axis.bar(message("data parallel") if k is None else f"K={k}", row["synchronisations"])
    loss_axis.set(title=message("Training loss (mean of the processes)"), xlabel=message("optimizer step"),
                  ylabel=message("loss"))
    sync_axis.set(title=message("Synchronisations in the run"), ylabel=message("times the processes talked"))
    loss_axis.legend()
    figure.tight_layout()
    return in_the_language(figure)


def plot_mixed_precision(rows):
    """Lesson 7: time of a forward and backward pass (with its spread) and peak memory of a training step per
    precision, relative to float32."""
    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(9, 3.2))
    names = [row["precision"] for row in rows]
    spread = [[row["time_ratio"] - row["time_ratio_low"] for row in rows],
              [row["time_ratio_high"] - row["time_ratio"] for row in rows]]
    time_axis.bar(names, [row["time_ratio"] for row in rows], yerr=spread, capsize=4)
    memory_axis.bar(names, [row["peak_mib"] / rows[0]["peak_mib"] for row in rows])
    time_axis.set(ylabel=message("time / float32"),
                  title=message("Time of a forward and backward pass (lowest to highest)"))
    memory_axis.set(ylabel=message("peak memory / float32"), title=message("Peak training memory"))
    for axis in (time_axis, memory_axis):
        axis.axhline(1, color="gray", linewidth=0.8)
    figure.tight_layout()
    return in_the_language(figure)


def plot_optimizers(rows):
    """Lesson 8: the training loss of each optimizer of compare_optimizers, and the bytes of its state per weight."""
    figure, (loss_axis, bytes_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    for row in rows:
        loss_axis.plot(range(1, len(row["loss"]) + 1), row["loss"], label=row["optimizer"])
        bytes_axis.bar(row["optimizer"], row["bytes_per_parameter"])
    loss_axis.set(title=message("Training loss"), xlabel=message("optimizer step"), ylabel=message("loss"))
    bytes_axis.set(title=message("Optimizer state"), ylabel=message("bytes per weight"))
    loss_axis.legend()
    figure.tight_layout()
    return in_the_language(figure)


def plot_resume(rows, checkpoint, stop_after):
    """Lesson 9: the loss of each run of measure_resume (a grey line at the crash), and the checkpoint's files."""
    figure, (loss_axis, size_axis) = plt.subplots(1, 2, figsize=(11, 3.5))
    for row, style in zip(rows, ("-", "--", ":")):
        loss_axis.plot(range(1, row["optimizer_steps"] + 1), row["loss"], style, label=run_name(row["run"]))
    loss_axis.axvline(stop_after, color="grey", alpha=0.5)
    loss_axis.set(title=message("Training loss (grey: the crash)"), xlabel=message("optimizer step"),
                  ylabel=message("loss"))
    loss_axis.legend(fontsize=8)
    plot_file_sizes(checkpoint, size_axis)
    figure.tight_layout()
    return in_the_language(figure)


def plot_sharding(rows):
    """Lesson 10: each process's bytes of parameters, gradients and optimizer state (stacked), data parallel
    and fully sharded (measure_sharding's rows), and the loss of both runs."""
    from .sharding import PARTS
    figure, (bytes_axis, loss_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
    names = {"parameters": message("parameters"), "gradients": message("gradients"),
             "optimizer_state": message("optimizer state")}
    bars = [(mode_name(row["mode"]), process, row) for row in rows for process in range(row["processes"])]
    labels = [message("{mode}\nprocess {process}", mode=mode, process=process) for mode, process, _ in bars]
    bottom = np.zeros(len(bars))
    for part in PARTS:
        heights = np.array([row["bytes"][part][process] / 1e6 for _, process, row in bars])
        bytes_axis.bar(labels, heights, bottom=bottom, label=names[part])
        bottom += heights
    bytes_axis.set(title=message("Kept between steps, per process"), ylabel=message("MB"))
    bytes_axis.legend(fontsize=8)
    bytes_axis.tick_params(axis="x", labelsize=8)
    for row, style in zip(rows, ("-", "--")):
        loss_axis.plot(range(1, len(row["loss"]) + 1), row["loss"], style, label=mode_name(row["mode"]))
    loss_axis.set(title=message("Training loss"), xlabel=message("optimizer step"), ylabel=message("loss"))
    loss_axis.legend()
    figure.tight_layout()
    return in_the_language(figure)
