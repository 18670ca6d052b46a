"""Figures 6-9: what each technique of lessons 05-08 buys and costs, measured by the helpers the lessons use.

6 gradient checkpointing (memory and time ratio), 7 bfloat16 against float32, 8 optimizer-state bytes
per parameter, 9 local SGD (synchronisations saved, final loss against data-parallel training).
"""
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from helpers import (compare_optimizers, eight_bit_unavailable, measure_checkpointing, measure_local_sgd,
                     measure_mixed_precision, quiet, synchronisations_saved)
from helpers.optimizers import OPTIMIZERS

from .common import Figure, median, new_plot, save_plot, summary
from .training import fresh_model, tokenized_data


# ---- Figure 6: gradient checkpointing, peak memory and forward + backward time with / without ----

def figure_checkpointing(setting, folder):
    tokenizer, data = tokenized_data(setting["checkpointing_sizes"])
    batch_sizes = setting["checkpointing_batch_sizes"]
    rounds = []  # one list of rows (one per batch size) per repeat
    for _ in range(setting["repeats"]):
        with quiet():
            rounds.append(measure_checkpointing(fresh_model(), data["train"], tokenizer, batch_sizes,
                                                repeats=setting["step_repeats"], progress=False))
    memory = {b: [r[i]["peak_mib_checkpointed"] / r[i]["peak_mib"] for r in rounds] for i, b in enumerate(batch_sizes)}
    time = {b: [r[i]["seconds_checkpointed"] / r[i]["seconds"] for r in rounds] for i, b in enumerate(batch_sizes)}
    figure = Figure(6, "Gradient checkpointing: peak memory and forward + backward time, with / without")
    figure.table = [["batch size", "tokens", "peak MiB without", "peak MiB with", "memory ratio",
                     "ms without", "ms with", "time ratio"]]
    for i, b in enumerate(batch_sizes):
        figure.table.append([str(b), str(rounds[0][i]["tokens"]),
                             summary([r[i]["peak_mib"] for r in rounds], 1),
                             summary([r[i]["peak_mib_checkpointed"] for r in rounds], 1), summary(memory[b]),
                             summary([r[i]["seconds"] * 1e3 for r in rounds], 0),
                             summary([r[i]["seconds_checkpointed"] * 1e3 for r in rounds], 0), summary(time[b])])
    largest = batch_sizes[-1]
    figure.headline = (f"At batch {largest}, training with checkpointing needs {summary(memory[largest], unit='x')} "
                       f"the peak memory and {summary(time[largest], unit='x')} the time of a forward and backward "
                       "pass of training without it.")
    plot, axis = new_plot()
    for ratio, label in ((memory, "peak memory (what it buys)"), (time, "forward + backward time (what it costs)")):
        middles = [median(ratio[b]) for b in batch_sizes]
        axis.errorbar(batch_sizes, middles, marker="o", capsize=4, label=label,
                      yerr=[[m - min(ratio[b]) for m, b in zip(middles, batch_sizes)],
                            [max(ratio[b]) - m for m, b in zip(middles, batch_sizes)]])
    axis.axhline(1.0, color="black", linewidth=1, linestyle="--", label="without checkpointing")
    axis.set_xscale("log", base=2)
    axis.minorticks_off()
    axis.set(xticks=batch_sizes, xticklabels=[str(b) for b in batch_sizes], xlabel="batch size",
             ylabel="with / without checkpointing", title="Gradient checkpointing on the default model")
    axis.grid(alpha=0.3)
    axis.legend(loc="center right")
    figure.plot = save_plot(plot, folder, "checkpointing.png")
    figure.method = (
        f"helpers.checkpointing.measure_checkpointing on the default model (fresh weights every round), batches of "
        f"{', '.join(map(str, batch_sizes))} pairs from the first of {len(data['train'])} training pairs. Memory: one "
        "real optimizer step with Adam (helpers.measure_peak_memory, torch's allocator, weights not counted), "
        f"checkpointing off and on. Time: forward + backward, the two settings taking turns, median of "
        f"{setting['step_repeats']} passes after a warm-up. {setting['repeats']} rounds; each ratio is taken "
        "within a round. Where both peaks are the same, the peak is Adam's step (gradients and two moments, about "
        "3 x 4 bytes per parameter), not the activations that checkpointing drops.")
    return figure


# ---- Figure 7: bfloat16 (autocast) against float32 on the CPU ----

def figure_precision(setting, folder):
    tokenizer, data = tokenized_data(setting["precision_sizes"])
    batch_size = setting["precision_batch_size"]
    rows = []  # per repeat: {precision: row}
    for _ in range(setting["repeats"]):
        with quiet():
            measured = measure_mixed_precision(fresh_model(), data["train"], tokenizer, batch_size,
                                               repeats=setting["step_repeats"], progress=False)
        rows.append({row["precision"]: row for row in measured})
    time = [r["bfloat16"]["seconds"] / r["float32"]["seconds"] for r in rows]
    memory = [r["bfloat16"]["peak_mib"] / r["float32"]["peak_mib"] for r in rows]
    device = "this CPU" if rows[0]["float32"]["device"] == "cpu" else "the GPU"  # where fresh_model is: the CPU
    figure = Figure(7, "Mixed precision: bfloat16 (autocast) against float32")
    figure.table = [["precision", "ms per forward + backward", "ratio to float32", "peak MiB", "ratio to float32"]]
    figure.table.append(["float32", summary([r["float32"]["seconds"] * 1e3 for r in rows], 0), "1",
                         summary([r["float32"]["peak_mib"] for r in rows], 1), "1"])
    figure.table.append(["bfloat16", summary([r["bfloat16"]["seconds"] * 1e3 for r in rows], 0), summary(time),
                         summary([r["bfloat16"]["peak_mib"] for r in rows], 1), summary(memory)])
    speed = "slower" if median(time) > 1.1 else "faster" if median(time) < 0.9 else "about as long"
    figure.headline = (f"On {device}, a forward and backward pass in bfloat16 takes {summary(time, unit='x')} the "
                       f"time of one in float32 ({speed}), and a training step needs {summary(memory, unit='x')} "
                       "its peak memory.")
    plot, axis = new_plot()
    for x, (ratio, label) in enumerate(((time, "forward + backward time"), (memory, "peak memory"))):
        m = median(ratio)
        axis.bar(x, m, yerr=[[m - min(ratio)], [max(ratio) - m]], capsize=4, label=label)
    axis.axhline(1.0, color="black", linewidth=1, linestyle="--", label="float32")
    axis.set(xticks=[0, 1], xticklabels=["forward + backward time", "peak memory"], ylabel="bfloat16 / float32",
             title=f"bfloat16 against float32, batch {batch_size}")
    axis.legend()
    figure.plot = save_plot(plot, folder, "precision.png")
    figure.method = (
        f"helpers.precision.measure_mixed_precision on the default model (fresh weights every round), a batch of "
        f"{batch_size} pairs, on {device} with the torch threads given below. Time: forward + backward with the "
        f"forward pass under torch.autocast(bfloat16) or in float32, the two taking turns, median of "
        f"{setting['step_repeats']} passes after a warm-up. Memory: one optimizer step with Adam "
        f"(helpers.measure_peak_memory, torch's allocator, weights not counted). {setting['repeats']} rounds; each "
        "ratio is taken within a round. Whether bfloat16 is faster depends on the size of the matrix products and "
        "on the CPU's bfloat16 instructions (AVX512-BF16 or AMX on x86, BF16 on Arm); autocast's conversions cost "
        "time on every CPU.")
    return figure


# ---- Figure 8: optimizer-state bytes per parameter ----

def _compare_in_child(data, tokenizer, batch_size):
    """compare_optimizers in a forked process: once a process imports bitsandbytes, accelerate's
    notebook_launcher refuses to start processes from it, and figure 9 needs them."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        return pool.submit(_compare, data, tokenizer, batch_size).result()


def _compare(data, tokenizer, batch_size):
    with quiet():
        # the CPU, as every figure: a child forked after the parent used CUDA could not use it
        return compare_optimizers(data, tokenizer, batch_size=batch_size, device="cpu", progress=False)


def figure_optimizers(setting, folder):
    tokenizer, data = tokenized_data(setting["optimizer_sizes"])
    batch_size = setting["optimizer_batch_size"]
    rows = {row["optimizer"]: row for row in _compare_in_child(data["train"], tokenizer, batch_size)}
    adamw = rows["adamw"]["bytes_per_parameter"]
    figure = Figure(8, "Optimizers: optimizer-state bytes per parameter")
    figure.table = [["optimizer", "state MiB", "bytes per parameter", "ratio to AdamW", "mean loss, last 5 steps"]]
    for name in OPTIMIZERS:
        if name not in rows:
            figure.table.append([name, "not measured: " + (eight_bit_unavailable("cpu") or "it did not run"), "", "",
                                 ""])
            continue
        row = rows[name]
        figure.table.append([name, f"{row['state_bytes'] / 2 ** 20:.2f}", f"{row['bytes_per_parameter']:.3f}",
                             f"{row['bytes_per_parameter'] / adamw:.3f}", f"{row['final_loss']:.3f}"])
    figure.headline = "Optimizer state per parameter (n=1, bytes are deterministic): " + "; ".join(
        f"{name} {rows[name]['bytes_per_parameter']:.2f} B ({rows[name]['bytes_per_parameter'] / adamw:.2f}x AdamW)"
        if name in rows else f"{name} not measured ({eight_bit_unavailable('cpu') or 'it did not run'})"
        for name in OPTIMIZERS) + "."
    plot, axis = new_plot()
    measured = [name for name in OPTIMIZERS if name in rows]
    axis.bar(measured, [rows[name]["bytes_per_parameter"] for name in measured])
    axis.axhline(4.0, color="black", linewidth=1, linestyle="--", label="the float32 weight itself (4 B)")
    axis.set(ylabel="state bytes per parameter", title="What each optimizer keeps per parameter")
    axis.legend()
    figure.plot = save_plot(plot, folder, "optimizers.png")
    figure.method = (
        f"helpers.compare_optimizers trains the default model on the CPU from the same start on the same "
        f"{len(data['train'])} training pairs in batches of {batch_size} (one epoch, learning rate 5e-4) with each "
        "optimizer, in a "
        "forked child process (bitsandbytes' import would stop figure 9 from starting its processes). The bytes are "
        "summed over every tensor in optimizer.state after training (helpers.optimizer_state_bytes) and divided by "
        "the number of trained parameters. Adafactor runs as make_optimizer builds it (no first moment, beta1=None; "
        "a matrix keeps one mean per row and per column of the second moment). The bytes depend on the shapes "
        "only, not on the data or the machine: one run is exact, so n=1. The loss column is a sanity check, not a "
        "comparison: a few steps, one seed.")
    return figure


# ---- Figure 9: local SGD, synchronisations saved and the final loss against data-parallel training ----

def figure_local_sgd(setting, folder):
    tokenizer, data = tokenized_data(setting["local_sgd_sizes"])
    steps = setting["local_sgd_steps"]
    last = setting["local_sgd_last_losses"]
    with quiet():
        rows = measure_local_sgd(data["train"], tokenizer, variants=(None, *steps),
                                 batch_size=setting["local_sgd_batch_size"])
    saved = synchronisations_saved(rows)
    final = {row["local_sgd_steps"]: median(row["loss"][-last:]) for row in rows}
    figure = Figure(9, "Local SGD: synchronisations saved and the final loss, against data-parallel training")
    figure.table = [["K", "optimizer steps", "synchronisations", "saved (data parallel / local SGD)",
                     f"final loss (median of the last {last} steps)", "ratio to data parallel"]]
    for row in rows:
        k = row["local_sgd_steps"]
        figure.table.append(["data parallel" if k is None else str(k), str(row["optimizer_steps"]),
                             str(row["synchronisations"]), "1" if k is None else f"{saved[k]:.2f}x",
                             f"{final[k]:.3f}", f"{final[k] / final[None]:.3f}"])
    figure.headline = (
        "Data-parallel synchronisations per local-SGD synchronisation: "
        + ", ".join(f"K={k} {saved[k]:.2f}x" for k in steps)
        + f"; final training loss against data parallel's {final[None]:.3f}: "
        + ", ".join(f"K={k} {final[k] / final[None]:.2f}x" for k in steps) + " (n=1: counts are deterministic).")
    names = ["data parallel" if row["local_sgd_steps"] is None else f"K={row['local_sgd_steps']}" for row in rows]
    plot, (count_axis, loss_axis) = new_plot(10, 3.8, columns=2)
    count_axis.bar(names, [row["synchronisations"] for row in rows])
    count_axis.set(ylabel="synchronisations in the run", title="What local SGD saves: synchronisations")
    for name, row in zip(names, rows):
        loss_axis.plot(range(1, len(row["loss"]) + 1), row["loss"], label=name, linewidth=1)
    loss_axis.set(xlabel="optimizer step", ylabel="training loss (mean of the 2 processes)",
                  title="What it does to the loss")
    loss_axis.grid(alpha=0.3)
    loss_axis.legend()
    figure.plot = save_plot(plot, folder, "local_sgd.png")
    figure.method = (
        f"helpers.measure_local_sgd: 2 CPU processes (gloo), the default model with dropout off, the same start and "
        f"the same batches for every K; {len(data['train'])} training pairs, batches of "
        f"{setting['local_sgd_batch_size']} per process, one epoch, Adam (learning rate 5e-4). Data parallel "
        "averages the gradients in every step; LocalSGD averages the parameters every K steps and once at the end. "
        "A synchronisation is a step (or end) at which the processes exchanged data, counted by hooks on DDP and "
        "LocalSGD. Counts are deterministic; the loss comes from one seed, so n=1: its ratio shows the direction, "
        "not a spread. Times are not compared: the 2 processes share the 2 cores with the rest of the machine.")
    return figure
