"""Lesson 4's claims about the Trainer, accumulation and num_items_in_batch (transformers 5).

- A sequence classifier straight from `from_pretrained` accepts **kwargs but ignores
  num_items_in_batch: with gradient_accumulation_steps=2 its update is 2x the large-batch update.
- `model.accepts_loss_kwargs = False` fixes it (the Trainer then divides by the steps itself).
- The Trainer passes num_items_in_batch with one accumulation step too (the batch size).
If transformers fixes the trap upstream, the first test fails: then lesson 4 must change.
"""
import functools

import pytest
import torch
from transformers import TrainingArguments

import helpers
from plain_trainer import BATCH, InOrderTrainer, plain_model


def one_step(model, dataset, tokenizer, n, tmp_path):
    """One optimizer step of BATCH examples in n micro-batches; returns (update, counts the model got)."""
    counts, forward = [], model.forward

    @functools.wraps(forward)  # keeps the signature: Trainer reads it to choose the columns
    def recording_forward(*args, **kwargs):
        counts.append(kwargs.get("num_items_in_batch"))
        return forward(*args, **kwargs)

    model.forward = recording_forward
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=BATCH // n,
                             gradient_accumulation_steps=n, num_train_epochs=1, max_grad_norm=0,
                             save_strategy="no", disable_tqdm=True, use_cpu=True)
    trainer = InOrderTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             optimizers=(optimizer, torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0)))
    with helpers.quiet():
        trainer.train()
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    return after - before, [int(count) if count is not None else None for count in counts]


@pytest.fixture(scope="module")
def dataset(small_data):
    return small_data["train"].select(range(BATCH))


@pytest.fixture(scope="module")
def large_batch(dataset, tokenizer, tmp_path_factory):
    return one_step(plain_model(), dataset, tokenizer, 1, tmp_path_factory.mktemp("large"))


def test_plain_classifier_gets_n_times_the_update(dataset, tokenizer, large_batch, tmp_path):
    update, counts = one_step(plain_model(), dataset, tokenizer, 2, tmp_path)
    assert counts == [BATCH, BATCH], "the Trainer passes the count of the whole step to every micro-batch"
    assert (update.norm() / large_batch[0].norm()).item() == pytest.approx(2.0, rel=1e-3)


def test_trainer_passes_the_count_with_one_accumulation_step_too(large_batch):
    assert large_batch[1] == [BATCH]


@pytest.mark.parametrize("fix", ["accepts_loss_kwargs = False", "helpers.load_model"])
def test_both_fixes_give_the_large_batch_update(fix, dataset, tokenizer, large_batch, tmp_path):
    if fix == "helpers.load_model":
        with helpers.quiet():
            model = helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    else:
        model = plain_model()
        model.accepts_loss_kwargs = False
    update, _ = one_step(model, dataset, tokenizer, 2, tmp_path)
    assert torch.allclose(update, large_batch[0], atol=1e-6), f"with {fix} the update differs from the large batch"
