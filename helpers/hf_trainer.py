"""The Hugging Face Trainer path: TrainingArguments with evaluation every epoch, accuracy and F1.

Lesson 4 builds it with `make_trainer`; `python -m helpers.train_script --path trainer` runs it.
"""
from transformers import Trainer, TrainingArguments

from .checks import require_positive_int
from .metrics import compute_metrics
from .training import make_scheduler

# make_trainer owns the schedule; these arguments would be ignored, so they are refused.
SCHEDULE_ARGUMENTS = ("warmup_steps", "warmup_ratio", "lr_scheduler_type", "lr_scheduler_kwargs")


class LoopScheduleTrainer(Trainer):
    """A Trainer with the loops' learning-rate schedule (`helpers.make_scheduler`).

    `TrainingArguments(warmup_steps=0.1)` warms up for ceil(0.1 * N) steps
    (transformers/training_args.py, `get_warmup_steps`); the slides and the loops use
    int(0.1 * N). With N not a multiple of 10 the two differ, so this Trainer builds its
    schedule with the loops' function (overriding `create_scheduler`, a documented hook).
    """

    def create_scheduler(self, num_training_steps, optimizer=None):
        if self.lr_scheduler is None:
            self.lr_scheduler = make_scheduler(optimizer or self.optimizer, num_training_steps)
            self._created_lr_scheduler = True
        return self.lr_scheduler


def make_trainer(model, tokenizer, data, *, output_dir="build/trainer", epochs=2, batch_size=16,
                 gradient_accumulation_steps=2, learning_rate=5e-4, **training_args):
    """A Trainer on tokenized `data` (train / validation splits); evaluates every epoch.

    Its learning rate follows the loops' schedule (warm-up for int(0.1 * N) of the N optimizer
    steps, then linear decay). Extra keyword arguments go to TrainingArguments and win over the
    defaults below (e.g. seed=1, use_cpu=True, logging_steps=1).
    """
    require_positive_int("epochs", epochs)
    require_positive_int("batch_size", batch_size)
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    refused = sorted(set(training_args) & set(SCHEDULE_ARGUMENTS))
    if refused:
        raise ValueError(f"make_trainer uses the loops' schedule (helpers.make_scheduler) and cannot take "
                         f"{', '.join(refused)}; for another schedule build a Trainer yourself")
    defaults = dict(
        output_dir=output_dir,
        eval_strategy="epoch",          # `evaluation_strategy` on older slides
        gradient_accumulation_steps=gradient_accumulation_steps,
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=64,
        learning_rate=learning_rate,
        logging_strategy="epoch",
        save_strategy="no",
    )
    args = TrainingArguments(**{**defaults, **training_args})
    return LoopScheduleTrainer(
        model=model, args=args,
        train_dataset=data["train"], eval_dataset=data["validation"],
        processing_class=tokenizer,     # `tokenizer=` on older slides (a TypeError now); pads each batch
        compute_metrics=compute_metrics,
    )
