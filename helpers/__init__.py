"""The course's training core: data, model, the training loops of the slides, plots.

Lessons import it as `import helpers`; tests, `make run` and grading use the same code.
"""
from .checkpointing import (activation_checkpointing, gradient_difference, measure_checkpointing,
                            train_checkpointed)
from .corpus import make_paraphrase_corpus
from .data import check_data, load_data, make_dataloader, tokenize_data
from .distributed import run_on_processes
from .memory import measure_peak_memory
from .metrics import classification_metrics, compute_metrics
from .modeling import count_loss_per_example, load_model, load_tokenizer
from .plots import plot_history
from .precision import measure_mixed_precision, train_mixed_precision
from .quiet import quiet
from .trainer import make_trainer
from .training import (History, evaluate, examples_per_window, make_scheduler,
                       optimizer_steps_per_epoch, train_accelerate, train_pytorch)

__all__ = [
    "History", "activation_checkpointing", "check_data", "classification_metrics", "compute_metrics", "count_loss_per_example",
    "evaluate", "examples_per_window", "gradient_difference", "load_data", "load_model", "load_tokenizer",
    "make_dataloader", "make_paraphrase_corpus", "measure_checkpointing", "measure_mixed_precision",
    "measure_peak_memory", "make_scheduler", "make_trainer",
    "optimizer_steps_per_epoch", "plot_history", "quiet", "run_on_processes",
    "tokenize_data", "train_accelerate", "train_checkpointed", "train_mixed_precision", "train_pytorch",
]
