"""The course's training core: data, model, the training loops of the slides, plots.

Lessons import it as `import helpers`; tests, `make run` and grading use the same code.
Which module teaches what, and which lesson uses it: helpers/README.md (start with data.py,
modeling.py, training.py and slides.py).

`import helpers` itself imports nothing heavy: each name below is imported from its module on
first use (PEP 562's module `__getattr__`), so a kernel pays only for what its lesson uses
(scikit-learn, the Trainer, accelerate's LocalSGD, bitsandbytes ... only where a lesson needs
them). `helpers.load_data`, `from helpers import load_data` and `helpers.exercises` all work.
"""
import importlib
from pathlib import Path

# module -> the public names it gives to `helpers`
EXPORTS = {
    "accumulation": ["memory_explanation", "plot_accumulation"],
    "checkpointing": ["activation_checkpointing", "gradient_difference", "measure_checkpointing",
                      "train_checkpointed"],
    "corpus": ["make_paraphrase_corpus"],
    "data": ["check_data", "load_data", "make_dataloader", "tokenize_data"],
    "data_preparation": ["batches_per_process", "dynamic_padding_explanation", "epoch_times", "lengths_summary",
                         "map_conclusion", "padding_conclusions", "padding_table", "plot_padded_batches", "plot_padding",
                         "process_batches_table", "time_map"],
    "distributed": ["run_on_processes"],
    "fsdp_step": ["all_gathers_explained", "all_reduces_explained", "communication_explained", "kept_share",
                  "plot_fsdp_step", "sharded_share_explained"],
    "hf_trainer": ["make_trainer"],
    "language": ["current_language", "formatted", "message", "number", "use_language"],
    "local_sgd": ["local_sgd_time_conclusion", "measure_local_sgd", "plot_local_sgd_timeline", "synchronisations_saved",
                  "train_local_sgd"],
    "memory": ["measure_peak_memory"],
    "metrics": ["classification_metrics", "compute_metrics", "majority_class_accuracy"],
    "modeling": ["count_loss_per_example", "load_model", "load_tokenizer"],
    "optimizers": ["adafactor_state_explained", "compare_optimizers", "eight_bit_unavailable", "make_optimizer",
                   "optimizer_state_bytes", "state_bytes_per_parameter"],
    "plots": ["plot_checkpointing", "plot_ease_and_control", "plot_history", "plot_local_sgd",
              "plot_mixed_precision", "plot_optimizers", "plot_peak_memory", "plot_resume",
              "plot_sharding"],
    "predictions": ["prediction_line"],
    "precision": ["measure_mixed_precision", "train_mixed_precision"],
    "quiet": ["quiet"],
    "reports": ["checkpointing_table", "epoch_summary", "local_sgd_table", "optimizer_table", "precision_table",
                "resume_table", "sharding_table"],
    "resume": ["checkpoint_bytes", "checkpoint_explained", "prepare_resumable", "resume_point", "train_resumable"],
    "sharding": ["count_on_sharded_model", "layer_classes", "loss_difference", "measure_sharding", "shard_model"],
    "training": ["History", "evaluate", "examples_per_window", "make_scheduler", "optimizer_steps_per_epoch",
                 "train_accelerate", "train_pytorch"],
}
_MODULE_OF = {name: module for module, names in EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)
_SUBMODULES = {path.stem for path in Path(__file__).parent.glob("*.py") if path.stem != "__init__"}
# `quiet` also names a module: its first import would bind the module to `helpers.quiet`, so the
# function is bound now (helpers/quiet.py imports its libraries when a block starts)
from .quiet import quiet  # noqa: E402


def __getattr__(name):
    """Import a public name's module (or a submodule, `helpers.exercises`) on first use."""
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # next time a plain attribute: no call, and vars(helpers) shows it
    return value


def __dir__():
    """Tab completion shows every public name, imported yet or not."""
    return sorted(set(globals()) | set(__all__))
