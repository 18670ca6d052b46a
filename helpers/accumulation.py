"""Lesson 3, gradient accumulation: a picture of the micro-batches, their groups and the optimizer's
steps, drawn from the student's own `accumulation_step_due`, and what explains the memory it saves."""
from .checks import require_positive_int
from .language import message


def groups_of(num_batches, gradient_accumulation_steps):
    """The groups of an epoch, as lists of batch numbers: [[0, 1], [2, 3], [4]] for 5 batches in twos."""
    require_positive_int("num_batches", num_batches)
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    return [list(range(start, min(start + gradient_accumulation_steps, num_batches)))
            for start in range(0, num_batches, gradient_accumulation_steps)]


def with_a_shorter_group(num_batches, gradient_accumulation_steps):
    """The smallest number of batches per group above `gradient_accumulation_steps` that leaves a
    shorter last group in an epoch of `num_batches` batches (None if there is none)."""
    return next((steps for steps in range(gradient_accumulation_steps + 1, num_batches)
                 if num_batches % steps), None)


def plot_accumulation(step_due, num_batches, gradient_accumulation_steps):
    """The epoch's micro-batches as boxes, coloured by group (the shorter last group in its own colour),
    and a mark after every batch where `step_due(index, num_batches, steps)` says the optimizer steps;
    a cross where a group ends without a step. One row for the run's `gradient_accumulation_steps`, and,
    where that leaves no shorter group, a row with the next number of steps that does."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    from .plots import in_the_language

    colours = {"even": "#92c5de", "odd": "#2166ac", "shorter": "#f4a582"}
    rows = [gradient_accumulation_steps]
    if num_batches % gradient_accumulation_steps == 0 and with_a_shorter_group(num_batches, gradient_accumulation_steps):
        rows.append(with_a_shorter_group(num_batches, gradient_accumulation_steps))
    figure, axis = plt.subplots(figsize=(max(6.0, 0.45 * num_batches + 2.5), 1.1 + 0.9 * len(rows)))
    for row, steps in enumerate(rows):
        y = len(rows) - 1 - row
        groups = groups_of(num_batches, steps)
        for number, group in enumerate(groups):
            shorter = len(group) < steps
            colour = colours["shorter"] if shorter else colours["odd" if number % 2 else "even"]
            for index in group:
                axis.add_patch(Rectangle((index, y + 0.1), 0.9, 0.5, facecolor=colour, edgecolor="black", linewidth=0.5))
                axis.text(index + 0.45, y + 0.35, str(index), ha="center", va="center", fontsize=7,
                          color="white" if colour == colours["odd"] else "black")
        stepped = [index for index in range(num_batches) if bool(step_due(index, num_batches, steps))]
        axis.plot([index + 0.95 for index in stepped], [y + 0.8] * len(stepped), "v", color="#b2182b",
                  markersize=8, linestyle="none")
        missed = [group[-1] for group in groups if group[-1] not in stepped]
        axis.plot([index + 0.95 for index in missed], [y + 0.8] * len(missed), "x", color="black",
                  markersize=8, linestyle="none")
    axis.set(xlim=(-0.2, num_batches + 0.3), ylim=(0, len(rows) + 0.15), xlabel=message("batch (index from 0)"),
             title=message("Lesson 3: micro-batches, their groups and the optimizer steps"))
    axis.set_yticks([len(rows) - 1 - row + 0.35 for row in range(len(rows))],
                    [message("{num_batches} batches, groups of {steps}", num_batches=num_batches, steps=steps)
                     for steps in rows])
    axis.set_xticks([])
    for side in ("top", "right", "left"):
        axis.spines[side].set_visible(False)
    axis.legend(handles=[Patch(facecolor=colours["even"], edgecolor="black", label=message("a full group")),
                         Patch(facecolor=colours["shorter"], edgecolor="black", label=message("the shorter last group")),
                         Line2D([], [], marker="v", color="#b2182b", linestyle="none",
                                label=message("optimizer step (your accumulation_step_due)")),
                         Line2D([], [], marker="x", color="black", linestyle="none",
                                label=message("a group ends without a step"))],
                loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=8, frameon=False)
    figure.tight_layout()
    return in_the_language(figure)


def memory_explanation(model):
    """One line on what a smaller micro-batch cannot save: the gradients and Adam's two moments, 3 numbers
    per trained weight (in MiB), are there at any micro-batch size; the activations shrink."""
    fixed = sum(3 * parameter.numel() * parameter.element_size()
                for parameter in model.parameters() if parameter.requires_grad) / 2**20
    return message("The activations shrink with the micro-batch; the gradients and Adam's two moments "
                   "({fixed:.1f} MiB: 3 numbers for each weight) stay the same at any micro-batch size.", fixed=fixed)
