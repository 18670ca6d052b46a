"""The course's training core: data, model, the training loops of the slides, plots.

Lessons import it as `import helpers`; tests, `make run` and grading use the same code.
"""
from .checkpointing import (activation_checkpointing, gradient_difference, measure_checkpointing,
                            train_checkpointed)
from .corpus import make_paraphrase_corpus
from .data import check_data, load_data, make_dataloader, tokenize_data
from .distributed import run_on_processes
from .local_sgd import measure_local_sgd, synchronisations_saved, train_local_sgd
from .memory import measure_peak_memory
from .metrics import classification_metrics, compute_metrics, majority_class_accuracy
from .modeling import count_loss_per_example, load_model, load_tokenizer
from .optimizers import (compare_optimizers, eight_bit_unavailable, make_optimizer, optimizer_state_bytes,
                         state_bytes_per_parameter)
from .plots import plot_history
from .precision import measure_mixed_precision, train_mixed_precision
from .quiet import quiet
from .resume import checkpoint_bytes, prepare_resumable, resume_point, train_resumable
from .trainer import make_trainer
from .training import (History, evaluate, examples_per_window, make_scheduler,
                       optimizer_steps_per_epoch, train_accelerate, train_pytorch)

__all__ = [
    "History", "activation_checkpointing", "check_data", "checkpoint_bytes", "classification_metrics",
    "compare_optimizers", "compute_metrics", "count_loss_per_example", "eight_bit_unavailable", "evaluate",
    "examples_per_window", "gradient_difference", "load_data", "load_model", "load_tokenizer",
    "majority_class_accuracy", "make_dataloader", "make_optimizer", "make_paraphrase_corpus", "make_scheduler",
    "make_trainer",
    "measure_checkpointing", "measure_local_sgd", "measure_mixed_precision", "measure_peak_memory",
    "optimizer_state_bytes", "optimizer_steps_per_epoch", "plot_history", "prepare_resumable", "quiet",
    "resume_point", "run_on_processes", "state_bytes_per_parameter", "synchronisations_saved",
    "tokenize_data", "train_accelerate", "train_checkpointed", "train_local_sgd", "train_mixed_precision",
    "train_pytorch", "train_resumable",
]
