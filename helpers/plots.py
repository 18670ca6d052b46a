"""Pictures of training: loss, validation accuracy and learning rate; the files of a checkpoint."""
import matplotlib.pyplot as plt
import numpy as np

from .language import message


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
    return figure


def readable_bytes(size):
    """12 B, 3.4 kB, 1.2 MB, 5.0 GB: a size in bytes as people read it (powers of 1000)."""
    for unit in ("B", "kB", "MB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


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
