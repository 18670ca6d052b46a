"""Train the default model once per path of the course and compare them in one table.

    python -m course.compare        # prints the table, saves build/compare/loss_curves.png

The paths: the plain loop, the Accelerator loop, accumulation by hand, accumulation with
`accelerator.accumulate`, and the Trainer. All start from the same weights and see the same
examples with the same effective batch, so they should reach about the same accuracy.
"""
import argparse
import time
from pathlib import Path

import torch
from transformers import PrinterCallback, ProgressCallback

from helpers import (History, evaluate, load_data, load_model, load_tokenizer, make_dataloader, make_trainer,
                     plot_history, quiet, tokenize_data, train_accelerate, train_pytorch)

from .paths import BUILD

# The fast settings: the pre-trained default model needs about 1000 pairs to learn the task
# (make bench, figure 5), so one epoch of 1024 keeps `make run` short; --epochs trains longer.
FAST = dict(sizes={"train": 1024, "validation": 300, "test": 8}, epochs=1, batch_size=32,
            learning_rate=5e-4)
ACCUMULATION_STEPS = 2


def _loops():
    """(name, train function, accumulation steps) for the four loops of the slides."""
    # every path on the CPU, as the Trainer (use_cpu=True): one table, one device
    accelerate = lambda model, loader, **kw: train_accelerate(model, loader, cpu=True, **kw)[0]
    pytorch = lambda model, loader, **kw: train_pytorch(model, loader, device="cpu", **kw)
    return [("plain loop", pytorch, 1), ("Accelerator", accelerate, 1),
            ("accumulation by hand", pytorch, ACCUMULATION_STEPS),
            ("accelerator.accumulate", accelerate, ACCUMULATION_STEPS)]


class _BarWithoutLogLines(ProgressCallback):
    """Trainer's progress bar, without the line it prints for every log (here: every step)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        pass


def _trainer_history(trainer, seconds):
    """The Trainer's log (one entry per optimizer step, with logging_steps=1) as a History."""
    logs = [log for log in trainer.state.log_history if "loss" in log]
    return History(loss=[log["loss"] for log in logs], learning_rate=[log["learning_rate"] for log in logs],
                   seconds=seconds)


def compare_paths(sizes, epochs, batch_size, learning_rate, seed=0, progress=True):
    """Train every path; return rows (path, optimizer steps, final loss, accuracy, seconds) and histories."""
    tokenizer = load_tokenizer()
    with quiet():
        data = tokenize_data(load_data(sizes=sizes, seed=seed), tokenizer)
    validation = make_dataloader(data["validation"], tokenizer, 64)
    rows, histories = [], {}
    for name, train, n in _loops():
        torch.manual_seed(seed)
        with quiet():  # no load report: the new head is expected
            model = load_model()
        loader = make_dataloader(data["train"], tokenizer, batch_size // n, shuffle=True, seed=seed)
        history = train(model, loader, epochs=epochs, learning_rate=learning_rate,
                        gradient_accumulation_steps=n, progress=progress)
        histories[name] = history
        rows.append((name, history.optimizer_steps, history.loss[-1], evaluate(model, validation)["accuracy"],
                     history.seconds))
    torch.manual_seed(seed)
    with quiet():
        model = load_model()
    trainer = make_trainer(model, tokenizer, data, output_dir=str(BUILD / "compare" / "trainer"), epochs=epochs,
                           batch_size=batch_size // ACCUMULATION_STEPS, learning_rate=learning_rate,
                           gradient_accumulation_steps=ACCUMULATION_STEPS, use_cpu=True,
                           disable_tqdm=not progress, seed=seed, logging_strategy="steps", logging_steps=1)
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if progress:
        trainer.add_callback(_BarWithoutLogLines)
    start = time.perf_counter()
    trainer.train()
    history = histories["Trainer"] = _trainer_history(trainer, time.perf_counter() - start)
    rows.append(("Trainer", history.optimizer_steps, history.loss[-1], trainer.evaluate()["eval_accuracy"],
                 history.seconds))
    return rows, histories


def format_table(rows):
    header = f"{'path':24s} {'optimizer steps':>15s} {'final loss':>10s} {'val. accuracy':>13s} {'seconds':>8s}"
    lines = [header, "-" * len(header)]
    lines += [f"{name:24s} {steps:15d} {loss:10.3f} {accuracy:13.3f} {seconds:8.1f}"
              for name, steps, loss, accuracy, seconds in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Compare the course's training paths on the default data.")
    parser.add_argument("--out", default=str(BUILD / "compare"), help="folder for the loss-curve plot")
    parser.add_argument("--epochs", type=int, default=FAST["epochs"])
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the lessons' kernels (course/run.py): two threads crawl on a busy machine
    rows, histories = compare_paths(**{**FAST, "epochs": args.epochs}, progress=not args.no_progress)
    print(format_table(rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_history(histories, title="The course's training paths").savefig(out / "loss_curves.png", dpi=120)
    print(f"loss curves: {out / 'loss_curves.png'}")


if __name__ == "__main__":
    main()
