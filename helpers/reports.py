"""What the lessons print: a line per epoch and tables of measurements, in the course's language."""
from .language import formatted, message, number


def epoch_summary(epoch, metrics, losses=None, majority_class=None):
    """A line for `epoch` (0: before training): the validation `metrics`, and the mean of `losses` if given.

    `metrics` is what helpers.evaluate gives ("loss", "accuracy", "f1") or what the Trainer logs
    ("eval_loss", "eval_accuracy", "eval_f1"). Before training, `majority_class` (the accuracy of
    always giving the most common answer) adds a line that explains the accuracy beside it.
    """
    metrics = {key: metrics[key] if key in metrics else metrics["eval_" + key] for key in ("loss", "accuracy", "f1")}
    if epoch == 0:
        line = message("before training: validation loss {loss:.3f}, accuracy {accuracy:.3f}, F1 {f1:.3f}",
                       **metrics)
        return line if majority_class is None else line + "\n" + untrained_accuracy(metrics["accuracy"], majority_class)
    if losses is None:
        return message("epoch {epoch}: validation loss {loss:.3f}, accuracy {accuracy:.3f}, F1 {f1:.3f}",
                       epoch=epoch, **metrics)
    return message("epoch {epoch}: training loss {training_loss:.3f}, validation loss {loss:.3f}, "
                   "accuracy {accuracy:.3f}, F1 {f1:.3f}", epoch=epoch, training_loss=sum(losses) / len(losses),
                   **metrics)


def untrained_accuracy(accuracy, majority_class):
    """Why the accuracy before training is what it is, beside the accuracy of always giving the most
    common answer: a new, random head on a pre-trained encoder."""
    values = dict(accuracy=accuracy, majority=majority_class, minority=1 - majority_class)
    if accuracy < (1 - majority_class) / 2:  # far below a head that ignores the pairs: it is not guessing
        return message("Always giving the most common answer would score {majority:.3f}, the other answer {minority:.3f}; "
                       "{accuracy:.3f} is below both. That is not a bug: the pre-trained encoder already tells the two "
                       "kinds of pairs apart, and the new head, still random, names them the wrong way round.", **values)
    return message("Always giving the most common answer would score {majority:.3f}: the new head is still random, "
                   "and training teaches it which kind of pair is which.", **values)


def table(headers, rows):
    """`rows` (lists of cells) under `headers` as text: the first column left-aligned, the others right-aligned.

    Each column is as wide as its widest cell, so that translated headers of any length line up.
    """
    lines = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(line[column]) for line in lines) for column in range(len(headers))]
    return "\n".join("  ".join(cell.ljust(width) if column == 0 else cell.rjust(width)
                              for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
                     for line in lines)


def checkpointing_table(rows):
    """Lesson 5: where it was measured, the peak memory of a training step and the time of a forward and
    backward pass, without and with checkpointing (measure_checkpointing)."""
    return table(
        [message("batch"), message("device"), message("tokens"), message("memory MiB"), message("checkpointed"),
         message("ratio"), message("time ms"), message("checkpointed"), message("ratio (lowest to highest)")],
        [[row["batch_size"], row["device"], row["tokens"], number(row["peak_mib"], ".1f"),
          number(row["peak_mib_checkpointed"], ".1f"),
          number(row["peak_mib_checkpointed"] / row["peak_mib"], ".2f") + " x", number(row["seconds"] * 1000, ".0f"),
          number(row["seconds_checkpointed"] * 1000, ".0f"), ratio_with_spread(row)]
         for row in rows])


def ratio_with_spread(row):
    """"1.30 x (1.20-1.40)": a row's time ratio, and its lowest and highest round."""
    return formatted("{ratio:.2f} x ({low:.2f}-{high:.2f})", ratio=row["time_ratio"], low=row["time_ratio_low"],
                     high=row["time_ratio_high"])


def local_sgd_table(rows, saved):
    """Lesson 6: steps, synchronisations, bytes sent and the last loss of each run of measure_local_sgd.

    `saved` is synchronisations_saved(rows); the last loss is the mean of the last 4 steps (one step is noisy).
    """
    last_loss = {row["local_sgd_steps"]: sum(row["loss"][-4:]) / len(row["loss"][-4:]) for row in rows}
    lines = table(
        ["K", message("steps"), message("synchronisations"), message("saved"), message("MB sent"),
         message("last loss"), message("seconds")],
        [[str(row["local_sgd_steps"]), row["optimizer_steps"], row["synchronisations"],
          "" if row["local_sgd_steps"] is None else number(saved[row["local_sgd_steps"]], ".1f") + "x",
          number(row["bytes_sent"] / 1e6, ".1f"), number(last_loss[row["local_sgd_steps"]], ".3f"),
          number(row["seconds"], ".1f")]
         for row in rows])
    differences = ", ".join(f"K={k}: {number(loss - last_loss[None], '+.3f')}" for k, loss in last_loss.items()
                            if k is not None)
    return lines + "\n" + message("last loss minus that of data-parallel training: {differences}",
                                  differences=differences)


def precision_table(rows):
    """Lesson 7: where it was measured, the time of a forward and backward pass and the peak memory of a
    training step, per precision (measure_mixed_precision)."""
    base = rows[0]
    return table(
        [message("precision"), message("device"), message("time ms"), message("of float32 (lowest to highest)"),
         message("peak MiB"), message("of float32")],
        [[row["precision"], row["device"], number(row["seconds"] * 1000, ".0f"), ratio_with_spread(row),
          number(row["peak_mib"], ".1f"), number(row["peak_mib"] / base["peak_mib"], ".2f") + " x"] for row in rows])


def optimizer_table(rows):
    """Lesson 8: where each optimizer trained, its state, its last loss and its seconds (compare_optimizers)."""
    adamw_bytes = next(row["state_bytes"] for row in rows if row["optimizer"] == "adamw")
    return table(
        [message("optimizer"), message("device"), message("state MB"), message("bytes/weight"), message("of AdamW"),
         message("last loss"), message("seconds")],
        [[row["optimizer"], row["device"], number(row["state_bytes"] / 1e6, ".2f"),
          number(row["bytes_per_parameter"], ".2f"), number(row["state_bytes"] / adamw_bytes, ".2f"),
          number(row["final_loss"], ".3f"), number(row["seconds"], ".1f")]
         for row in rows])


def run_name(run):
    """The name of a run of measure_resume (lesson 9) in the course's language."""
    names = {"uninterrupted": message("uninterrupted"), "resumed": message("resumed"),
             "resumed without skip_first_batches": message("resumed without skip_first_batches")}
    return names.get(run, run)


def resume_table(rows, checkpoint):
    """Lesson 9: each run's steps and its distance to the uninterrupted run; the files of the checkpoint."""
    runs = table([message("run"), message("optimizer steps"), message("largest weight difference to the "
                                                                      "uninterrupted run")],
                 [[run_name(row["run"]), row["optimizer_steps"], number(row["max_weight_difference"], ".3g")]
                  for row in rows])
    model_bytes = checkpoint["model.safetensors"]
    files = {**checkpoint, message("the whole checkpoint"): sum(checkpoint.values())}
    sizes = table([message("file"), "MB", message("x the model")],
                  [[name, number(size / 1e6, ".3f"), number(size / model_bytes, ".2f")]
                   for name, size in files.items()])
    return runs + "\n\n" + sizes


def mode_name(mode):
    """The name of a mode of measure_sharding (lesson 10) in the course's language."""
    names = {"data parallel": message("data parallel"), "fully sharded": message("fully sharded")}
    return names.get(mode, mode)


def sharding_table(rows):
    """Lesson 10: each process's MB of parameters, gradients and optimizer state, data parallel and fully
    sharded (measure_sharding's rows), and the collectives of one optimizer step."""
    parts = [("parameters", message("parameters MB")), ("gradients", message("gradients MB")),
             ("optimizer_state", message("optimizer state MB"))]
    memory = table(
        [message("mode"), message("process"), *(header for _, header in parts), message("total MB")],
        [[mode_name(row["mode"]), process, *(number(row["bytes"][part][process] / 1e6, ".2f") for part, _ in parts),
          number(sum(row["bytes"][part][process] for part, _ in parts) / 1e6, ".2f")]
         for row in rows for process in range(row["processes"])])
    kinds = ("all-reduce", "all-gather", "reduce-scatter")
    communication = table(
        [message("mode"), *(message("{kind} calls", kind=kind) for kind in kinds),
         *(message("{kind} MB", kind=kind) for kind in kinds), message("seconds")],
        [[mode_name(row["mode"]), *(number(row["calls_per_step"][kind], ".1f") for kind in kinds),
          *(number(row["bytes_per_step"][kind] / 1e6, ".2f") for kind in kinds), number(row["seconds"], ".1f")]
         for row in rows])
    return (memory + "\n\n" + message("Collectives per optimizer step (MB: the whole tensors they work on):")
            + "\n" + communication)
