"""Sentences of the lessons that a library or the course's own text could make untrue again.

Each test names the lesson that states the claim. If a library changes (a new torch, a new
transformers), the test fails, and the lesson's sentence must change with it.
"""
import re
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from transformers import TrainingArguments

import helpers
from course.paths import lesson_notebooks

sys.path.insert(0, str(Path(__file__).parent))
from test_trainer_accumulation import BATCH, InOrderTrainer, plain_model  # noqa: E402


def markdown(lesson):
    """The markdown of one lesson (its solutions/ notebook), one string."""
    [path] = lesson_notebooks([lesson])
    return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown")


def test_cpu_autocast_keeps_softmax_layer_norm_and_sums_in_bfloat16():
    """Lesson 7 and helpers/precision.py: on the CPU, of these only the loss comes out float32."""
    linear = torch.nn.Linear(16, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = linear(torch.randn(8, 16))
        dtypes = {"matrix product": hidden.dtype, "softmax": F.softmax(hidden, -1).dtype,
                  "layer_norm": F.layer_norm(hidden, (16,)).dtype, "sum": hidden.sum().dtype,
                  "loss": F.cross_entropy(hidden, torch.zeros(8, dtype=torch.long)).dtype}
    assert dtypes == {"matrix product": torch.bfloat16, "softmax": torch.bfloat16, "layer_norm": torch.bfloat16,
                      "sum": torch.bfloat16, "loss": torch.float32}
    assert linear.weight.dtype == torch.float32


def test_float16_loses_digits_below_6e_5_and_becomes_0_below_3e_8():
    """Lesson 7's numbers for float16 underflow."""
    assert torch.finfo(torch.float16).smallest_normal == pytest.approx(6.1e-5, rel=0.01)
    assert torch.tensor(1e-6).half().item() == pytest.approx(1.01e-6, rel=0.01)  # fewer digits, not 0
    assert torch.tensor(3.5e-8).half().item() > 0
    assert torch.tensor(2.9e-8).half().item() == 0 and torch.tensor(1e-8).half().item() == 0


def test_lesson_8_names_the_trainers_default_optimizer():
    [named] = re.findall(r'`"(\w+)"` \(the default', markdown("08_optimizers"))
    default = TrainingArguments(output_dir=tempfile.mkdtemp(), report_to="none").optim
    assert named == default.value


# `accelerator.backward` as the one who averages; "the slides say that ..." (lesson 2 corrects them) is fine
BACKWARD_AVERAGES = re.compile(r"(slides say that )?`accelerator\.backward(\(loss\))?`\s+(\w+\s+){0,2}"
                               r"(averag|synchronis|all-reduc)\w*", re.IGNORECASE)


def backward_averages(text):
    return [match.group(0) for match in BACKWARD_AVERAGES.finditer(" ".join(text.split())) if not match.group(1)]


def test_the_averaging_check_finds_the_old_sentence_and_lets_the_slides_be_quoted():
    assert backward_averages("optimizer step, `accelerator.backward` averaged the gradients of the processes")
    assert not backward_averages("The slides say that `accelerator.backward(loss)` synchronises the gradients;")


def test_no_lesson_says_accelerator_backward_averages_the_gradients():
    """The prepared (DistributedDataParallel) model averages them in its backward pass (lesson 2)."""
    for path in lesson_notebooks():
        assert not backward_averages(markdown(path.stem)), path.stem


def test_lesson_1_lists_every_lesson_and_only_the_last_ends_the_course():
    names = [path.stem for path in lesson_notebooks()]
    listed = re.findall(r"^\d+\. ", markdown("01_basic_loop").split("## Why write your own loop?")[0], re.MULTILINE)
    assert len(listed) == len(names)
    ends = [name for name in names if "end of the course" in markdown(name)]
    assert ends == [names[-1]]


def trainer_step_update(model, dataset, tokenizer, steps):
    """Two optimizer steps with the Trainer's defaults (AdamW, max_grad_norm=1.0) over `dataset`,
    in micro-batches of BATCH // steps; returns (the change of the weights, the logged losses)."""
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=BATCH // steps,
                             gradient_accumulation_steps=steps, num_train_epochs=1, logging_steps=1,
                             save_strategy="no", disable_tqdm=True, use_cpu=True, report_to="none")
    trainer = InOrderTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    with helpers.quiet():
        trainer.train()
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    return after - before, [log["loss"] for log in trainer.state.log_history if "loss" in log]


def test_with_adamw_and_clipping_the_accumulation_bug_doubles_the_logged_loss_not_the_update(small_data, tokenizer):
    """Lesson 4: with the Trainer's defaults, a plain from_pretrained classifier with
    gradient_accumulation_steps=2 makes the same update as with 1; its logged loss is 2x."""
    dataset = small_data["train"].select(range(2 * BATCH))
    update_1, losses_1 = trainer_step_update(plain_model(), dataset, tokenizer, 1)
    update_2, losses_2 = trainer_step_update(plain_model(), dataset, tokenizer, 2)
    assert (update_2.norm() / update_1.norm()).item() == pytest.approx(1.0, abs=1e-3)
    assert [b / a for a, b in zip(losses_1, losses_2)] == pytest.approx([2.0, 2.0], rel=1e-3)
