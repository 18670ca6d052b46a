"""The Hugging Face Trainer path: TrainingArguments with evaluation every epoch, accuracy and F1."""
from transformers import Trainer, TrainingArguments

from .checks import require_positive_int
from .metrics import compute_metrics


def make_trainer(model, tokenizer, data, *, output_dir="build/trainer", epochs=2, batch_size=16,
                 gradient_accumulation_steps=2, learning_rate=5e-4, **training_args):
    """A Trainer on tokenized `data` (train / validation splits); evaluates every epoch.

    Extra keyword arguments go to TrainingArguments and win over the defaults below
    (e.g. seed=1, use_cpu=True, logging_steps=1).
    """
    require_positive_int("epochs", epochs)
    require_positive_int("batch_size", batch_size)
    require_positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    defaults = dict(
        output_dir=output_dir,
        eval_strategy="epoch",          # `evaluation_strategy` on older slides
        gradient_accumulation_steps=gradient_accumulation_steps,
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=64,
        learning_rate=learning_rate,
        warmup_steps=0.1,               # a fraction: 10% of the optimizer steps
        logging_strategy="epoch",
        save_strategy="no",
        report_to="none",
    )
    args = TrainingArguments(**{**defaults, **training_args})
    return Trainer(
        model=model, args=args,
        train_dataset=data["train"], eval_dataset=data["validation"],
        processing_class=tokenizer,     # `tokenizer=` on older slides; pads each batch
        compute_metrics=compute_metrics,
    )
