"""Figures 3-5: the training core's overhead, memory with accumulation, and learning per second."""
import contextlib
import io
import tempfile
import time

import torch
from transformers import get_linear_schedule_with_warmup

from helpers import (evaluate, load_data, load_model, load_tokenizer, make_dataloader, make_trainer,
                     measure_peak_memory, quiet, tokenize_data, train_accelerate, train_pytorch)

from .common import Figure, median, new_plot, save_plot, summary, timed


def tokenized_data(sizes):
    tokenizer = load_tokenizer()
    with quiet():
        return tokenizer, tokenize_data(load_data(sizes=sizes), tokenizer)


def fresh_model():
    with quiet():
        return load_model()


# ---- Figure 3: seconds per optimizer step, each helpers path against a bare torch loop ----

def bare_torch_loop(model, dataloader, learning_rate=5e-4):
    """The loop of the slides with nothing around it: the yardstick of figure 3."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    steps = len(dataloader)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(steps * 0.1), steps)
    for batch in dataloader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return steps


def _trainer_path(model, tokenizer, data, batch_size):
    with tempfile.TemporaryDirectory() as folder, quiet(), contextlib.redirect_stdout(io.StringIO()):
        trainer = make_trainer(model, tokenizer, data, output_dir=folder, epochs=1, batch_size=batch_size,
                               gradient_accumulation_steps=1, use_cpu=True, disable_tqdm=True)
        trainer.train()
        return trainer.state.global_step


def figure_overhead(setting, folder):
    tokenizer, data = tokenized_data(setting["overhead_sizes"])
    batch_size = setting["overhead_batch_size"]
    loader = make_dataloader(data["train"], tokenizer, batch_size)
    paths = {
        "bare torch loop": lambda model: bare_torch_loop(model, loader),
        # on the CPU, as the other paths: on a GPU machine train_pytorch would take the GPU
        "helpers.train_pytorch": lambda model: train_pytorch(model, loader, device="cpu",
                                                             progress=False).optimizer_steps,
        "helpers.train_accelerate": lambda model: train_accelerate(
            model, loader, cpu=True, progress=False)[0].optimizer_steps,
        "helpers.make_trainer (Trainer)": lambda model: _trainer_path(model, tokenizer, data, batch_size),
    }
    names = list(paths)
    for name in names if setting["warm_up"] else ():  # first calls pay for imports and caches
        paths[name](fresh_model())
    per_step = {name: [] for name in names}
    for repeat in range(setting["repeats"]):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:  # rotate the order
            model = fresh_model()
            seconds, steps = timed(paths[name], model)
            per_step[name].append(seconds / steps)
    ratios = {name: [t / b for t, b in zip(per_step[name], per_step["bare torch loop"])] for name in names[1:]}
    figure = Figure(3, "Training core: seconds per optimizer step against a bare torch loop")
    figure.table = [["path", "ms per optimizer step", "ratio to the bare loop"]]
    figure.table.append(["bare torch loop", summary([s * 1e3 for s in per_step["bare torch loop"]], 1), "1"])
    for name in names[1:]:
        figure.table.append([name, summary([s * 1e3 for s in per_step[name]], 1), summary(ratios[name])])
    figure.headline = "Overhead ratio (median [min-max] over repeats): " + "; ".join(
        f"{name} {median(ratios[name]):.2f}x" for name in names[1:]) + "."
    plot, axis = new_plot()
    middles = [median(ratios[name]) for name in names[1:]]
    spreads = [[m - min(ratios[n]) for m, n in zip(middles, names[1:])],
               [max(ratios[n]) - m for m, n in zip(middles, names[1:])]]
    axis.bar([name.replace(" (Trainer)", "\n(Trainer)") for name in names[1:]], middles, yerr=spreads, capsize=4)
    axis.axhline(1.0, color="black", linewidth=1, linestyle="--", label="bare torch loop")
    axis.set(ylabel="time per step / bare loop's", title="Overhead of the helpers paths")
    axis.legend()
    figure.plot = save_plot(plot, folder, "overhead.png")
    figure.method = (
        f"The same default model (fresh weights from the cache for every run), the same "
        f"{len(data['train'])} training pairs in batches of {batch_size} ({len(loader)} optimizer steps, one epoch), "
        f"on the CPU. Each path is timed by the wall clock over the whole call (set-up included: the "
        f"Accelerator, the Trainer) and divided by its optimizer steps; each path ran once to warm up, "
        f"then {setting['repeats']} rounds in a rotating order, and each ratio is taken within a round. "
        f"The Trainer shuffles (its own sampler) and evaluates once on {len(data['validation'])} pairs at the end.")
    return figure


# ---- Figure 4: peak memory of a step, micro-batch B/N with N accumulation steps ----

def figure_memory(setting, folder):
    tokenizer, data = tokenized_data(setting["memory_sizes"])
    model = fresh_model()
    batch, steps = setting["memory_batch"], setting["memory_steps"]
    peaks = {(method, n): [] for method in ("allocator", "rss") for n in steps}
    for _ in range(setting["repeats"]):
        for n in steps:
            for method in ("allocator", "rss"):
                peaks[method, n].append(measure_peak_memory(model, data["train"], tokenizer, batch // n, n,
                                                            method=method))
    ratio = {key: [p / q for p, q in zip(values, peaks[key[0], 1])] for key, values in peaks.items()}
    figure = Figure(4, f"Memory: peak of one optimizer step at an effective batch of {batch}")
    figure.table = [["N", "micro-batch", "allocator peak MiB", "ratio to N=1", "resident-set peak MiB",
                     "ratio to N=1"]]
    for n in steps:
        figure.table.append([str(n), str(batch // n), summary(peaks["allocator", n]), summary(ratio["allocator", n]),
                             summary(peaks["rss", n]), summary(ratio["rss", n])])
    last = steps[-1]
    figure.headline = (
        f"Accumulating {last} micro-batches of {batch // last} needs {median(ratio['allocator', last]):.2f}x "
        f"the peak memory of one batch of {batch} (allocator; resident set: {median(ratio['rss', last]):.2f}x).")
    plot, axis = new_plot()
    for method, label in (("allocator", "torch allocator (exact tensor bytes)"),
                          ("rss", "resident set (VmHWM - VmRSS)")):
        middles = [median(peaks[method, n]) for n in steps]
        axis.errorbar(steps, middles, capsize=4, marker="o", label=label,
                      yerr=[[m - min(peaks[method, n]) for m, n in zip(middles, steps)],
                            [max(peaks[method, n]) - m for m, n in zip(middles, steps)]])
    axis.set_xscale("log", base=2)
    axis.minorticks_off()
    axis.set(xticks=steps, xticklabels=[f"N={n}\nB/N={batch // n}" for n in steps],
             ylabel="peak MiB above the weights", title=f"Peak memory at an effective batch of {batch}")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.plot = save_plot(plot, folder, "memory.png")
    figure.method = (
        "helpers.measure_peak_memory runs one real optimizer step (N forward and backward passes of "
        "B/N pairs, then Adam's step) on the default model and returns the peak memory allocated above "
        "what was held when the step began (gradients, Adam's moments, activations, temporaries). "
        "'allocator': torch's profiler records every allocation and free of torch's CPU allocator; the "
        "peak is the maximum of their running sum (the CPU counterpart of torch.cuda.max_memory_allocated). "
        "'resident set': malloc_trim(0), reset of VmHWM through /proc/self/clear_refs, then VmHWM after "
        f"the step minus VmRSS before it: it adds the C allocator's overhead and fragmentation. "
        f"{setting['repeats']} repeats of every point.")
    return figure


# ---- Figure 5: validation accuracy against training seconds ----

class _EvaluatingLoader:
    """A dataloader that evaluates the model every `every` batches, with its clock paused."""

    def __init__(self, loader, every, checkpoint):
        self.loader, self.every, self.checkpoint = loader, every, checkpoint
        self.dataset, self.batch_size = loader.dataset, loader.batch_size

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for index, batch in enumerate(self.loader, 1):
            yield batch  # the next request comes after this batch's optimizer step
            if index % self.every == 0 or index == len(self.loader):
                self.checkpoint()


def _learning_curve(model, train_loader, validation_loader, epochs, every):
    """(training seconds, validation accuracy) every `every` batches of one train_pytorch run."""
    points, paused, start = [], 0.0, time.perf_counter()

    def checkpoint():
        nonlocal paused
        pause, metrics = timed(evaluate, model, validation_loader)
        paused += pause
        points.append((time.perf_counter() - start - paused, metrics["accuracy"]))

    train_pytorch(model, _EvaluatingLoader(train_loader, every, checkpoint), epochs=epochs, device="cpu",
                  progress=False)  # the figure's title says CPU: on a GPU machine train_pytorch would take the GPU
    return points


def figure_learning(setting, folder):
    tokenizer, data = tokenized_data(setting["learning_sizes"])
    validation_loader = make_dataloader(data["validation"], tokenizer, 128)
    labels = [int(label) for label in data["validation"]["labels"]]
    majority = max(labels.count(label) for label in set(labels)) / len(labels)
    curves = []
    for seed in range(setting["learning_seeds"]):
        torch.manual_seed(seed)
        model = fresh_model()
        start_accuracy = evaluate(model, validation_loader)["accuracy"]
        train_loader = make_dataloader(data["train"], tokenizer, setting["learning_batch_size"], shuffle=True, seed=seed)
        every = max(1, len(train_loader) // setting["learning_points_per_epoch"])
        curves.append([(0.0, start_accuracy)] + _learning_curve(
            model, train_loader, validation_loader, setting["learning_epochs"], every))
    points = len(curves[0])
    seconds = [median([curve[i][0] for curve in curves]) for i in range(points)]
    accuracy = [[curve[i][1] for curve in curves] for i in range(points)]
    figure = Figure(5, "Learning: validation accuracy of the default model and data against training seconds")
    figure.table = [["training seconds (median)", "validation accuracy", "ratio to the majority class"]]
    for i in range(points):
        figure.table.append([f"{seconds[i]:.3f}", summary(accuracy[i], 3),
                             summary([a / majority for a in accuracy[i]])])
    figure.headline = (
        f"After {seconds[-1]:.0f} s of training ({setting['learning_epochs']} epochs) the validation accuracy is "
        f"{median(accuracy[-1]):.3f}, {median(accuracy[-1]) / majority:.2f}x the majority class's "
        f"{majority:.3f} (untrained: {median(accuracy[0]):.3f}).")
    plot, axis = new_plot()
    for seed, curve in enumerate(curves):
        axis.plot([s for s, _ in curve], [a for _, a in curve], marker=".", label=f"seed {seed}")
    axis.axhline(majority, color="black", linestyle="--", linewidth=1, label="majority class")
    axis.set(xlabel="training seconds (evaluation excluded)", ylabel="validation accuracy",
             title="Accuracy against training time (CPU)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.plot = save_plot(plot, folder, "learning.png")
    figure.method = (
        f"helpers.train_pytorch (defaults: Adam, learning rate 5e-4, linear warm-up and decay) on the default "
        f"corpus ({len(data['train'])} training pairs, {len(data['validation'])} validation pairs) and the "
        f"default model, batches of {setting['learning_batch_size']}, {setting['learning_epochs']} epochs, "
        f"{setting['learning_seeds']} seeds (shuffle order and dropout). The validation accuracy is measured "
        f"{setting['learning_points_per_epoch']} times per epoch inside the same run, with the training clock "
        "paused; the ratio is to the share of the majority class in the validation split.")
    return figure
