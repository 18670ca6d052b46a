"""Lesson 4's claims about the Trainer on several processes, run on 2 gloo CPU processes (transformers 5).

With `average_tokens_across_devices=True` (the default) the Trainer sums `num_items_in_batch` over the
processes and multiplies the loss by their number (`transformers/trainer.py`, `_get_num_items_in_batch`
and `compute_loss`), expecting the model to divide a summed loss by that global count. A plain
classifier returns its batch's mean, so it trains with P times the update even without accumulation;
`loss_is_scaled_for_ga = False` removes only the accumulation factor. The other fixes of the lesson
(helpers.load_model, `accepts_loss_kwargs = False`, or `loss_is_scaled_for_ga = False` together with
`average_tokens_across_devices=False`) give the update of one process with the whole batch.
"""
import pytest
import torch
from accelerate import PartialState
from transformers import TrainingArguments

import helpers
from plain_trainer import BATCH, InOrderTrainer, plain_model

# (fix, gradient_accumulation_steps): the update's size against one process with the whole batch, as
# lesson 4 (l4-slide-output) says it is on 2 processes
EXPECTED = {
    ("none", 1): 2.0,
    ("none", 2): 4.0,
    ("loss_is_scaled_for_ga = False", 1): 2.0,
    ("loss_is_scaled_for_ga = False", 2): 2.0,
    ("loss_is_scaled_for_ga = False, average_tokens_across_devices=False", 1): 1.0,
    ("loss_is_scaled_for_ga = False, average_tokens_across_devices=False", 2): 1.0,
    ("accepts_loss_kwargs = False", 1): 1.0,
    ("accepts_loss_kwargs = False", 2): 1.0,
    ("helpers.load_model", 1): 1.0,
    ("helpers.load_model", 2): 1.0,
}


def model_for(fix):
    if fix == "helpers.load_model":
        with helpers.quiet():
            return helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = plain_model()
    if fix == "accepts_loss_kwargs = False":
        model.accepts_loss_kwargs = False
    return model


def update(fix, accumulation_steps, dataset, tokenizer, folder):
    """One optimizer step (SGD, no clipping) of the BATCH examples on this process's share; the update."""
    model = model_for(fix)
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    processes = PartialState().num_processes
    args = TrainingArguments(output_dir=folder, per_device_train_batch_size=BATCH // processes // accumulation_steps,
                             gradient_accumulation_steps=accumulation_steps, num_train_epochs=1, max_grad_norm=0,
                             save_strategy="no", disable_tqdm=True, use_cpu=True, report_to="none",
                             average_tokens_across_devices="average_tokens_across_devices=False" not in fix)
    trainer = InOrderTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             optimizers=(optimizer, torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0)))
    if fix.startswith("loss_is_scaled_for_ga = False"):
        trainer.loss_is_scaled_for_ga = False
    with helpers.quiet():
        trainer.train()
    return torch.cat([p.detach().flatten() for p in model.parameters()]) - before


def updates_on_processes(dataset, tokenizer, folder):
    """Runs in each process: every case's update."""
    PartialState(cpu=True)
    return {case: update(*case, dataset, tokenizer, folder) for case in EXPECTED}


@pytest.fixture(scope="module")
def measured(small_data, tokenizer, tmp_path_factory):
    dataset = small_data["train"].select(range(BATCH))
    on_two = helpers.run_on_processes(updates_on_processes, dataset, tokenizer,
                                      str(tmp_path_factory.mktemp("two")), num_processes=2)
    # one process, the whole batch, a model whose loss is right: the update to compare with
    whole = update("accepts_loss_kwargs = False", 1, dataset, tokenizer, str(tmp_path_factory.mktemp("one")))
    return on_two, whole


@pytest.mark.parametrize("case", list(EXPECTED), ids=[f"{fix}, GA={steps}" for fix, steps in EXPECTED])
def test_update_on_two_processes_against_one_process(case, measured):
    on_two, whole = measured
    ratio = (on_two[case].norm() / whole.norm()).item()
    assert ratio == pytest.approx(EXPECTED[case], rel=1e-3), f"{case}: {ratio:.3f} times the one-process update"
    assert torch.allclose(on_two[case] / EXPECTED[case], whole, atol=1e-6), f"{case}: another direction"
