"""What lessons 3, 4 and 7 say about gradient clipping, num_items_in_batch and the effective batch,
checked against the installed torch, accelerate and transformers (helpers/clipping.py, helpers/batch_scaling.py)."""
import types

import pytest
import torch
from accelerate import Accelerator

from helpers import batch_scaling, clipping, exercises


def _accumulate(model, loader, max_norm, clip_every_micro_batch):
    """One optimizer step over two micro-batches (loss / 2), clipped once or after every micro-batch."""
    model.train()
    for batch in loader:
        (model(**batch).loss / 2).backward()
        if clip_every_micro_batch:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if not clip_every_micro_batch:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_clipping_every_micro_batch_changes_the_direction_of_the_step():
    """Lesson 3: clipping every micro-batch clips a part of the sum, and the step goes in another direction."""
    right = _accumulate(*exercises.tiny_problem(num_examples=8, batch_size=4)[:2], 1.0, False)
    wrong = _accumulate(*exercises.tiny_problem(num_examples=8, batch_size=4)[:2], 1.0, True)
    flat_right, flat_wrong = torch.cat([g.flatten() for g in right]), torch.cat([g.flatten() for g in wrong])
    assert flat_right.norm().item() == pytest.approx(1.0, rel=1e-4)   # the sum was clipped ...
    assert flat_wrong.norm().item() == pytest.approx(1.0, rel=1e-4)   # ... and so was the other one
    cosine = torch.nn.functional.cosine_similarity(flat_right, flat_wrong, dim=0).item()
    assert cosine < 0.999, f"the two clipped gradients point the same way (cosine {cosine:.5f})"


def test_accelerator_clip_grad_norm_unscales_first(monkeypatch):
    """Lessons 3 and 7: accelerator.clip_grad_norm_ calls unscale_gradients before it clips."""
    exercises.fresh_accelerator_state()
    accelerator = Accelerator(cpu=True)
    order = []
    monkeypatch.setattr(Accelerator, "unscale_gradients", lambda self, optimizer=None: order.append("unscale"))
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda *args, **kwargs: order.append("clip") or clip(
        *args, **kwargs))
    layer = torch.nn.Linear(3, 1)
    layer(torch.ones(2, 3)).sum().backward()
    accelerator.clip_grad_norm_(layer.parameters(), 1.0)
    exercises.fresh_accelerator_state()
    assert order == ["unscale", "clip"]


def test_unscale_gradients_calls_the_scalers_unscale_with_fp16():
    """accelerate's unscale_gradients divides by the scale when mixed_precision="fp16" with native AMP
    (on a GPU); on a CPU accelerate does not switch fp16 on, so this runs it on a stand-in Accelerator."""
    layer = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(layer(torch.ones(2, 3)).sum()).backward()
    scaled = clipping.gradient_norm(layer.parameters())
    stand_in = types.SimpleNamespace(native_amp=True, mixed_precision="fp16", scaler=scaler, _optimizers=[optimizer])
    Accelerator.unscale_gradients(stand_in, optimizer)
    assert scaled / clipping.gradient_norm(layer.parameters()) == pytest.approx(65536.0)


def _scaled_step(max_norm=None, unscale_first=True):
    """A float16 step on the CPU with an active GradScaler and SGD(lr=1); returns (weights before,
    weights after, the real gradient, the scaler)."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(layer.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler("cpu")
    with torch.autocast("cpu", dtype=torch.float16):
        output = layer(torch.randn(8, 4))
    assert output.dtype == torch.float16
    scaler.scale(output.float().pow(2).mean()).backward()
    real = [p.grad.detach().clone() / scaler.get_scale() for p in layer.parameters()]
    before = [p.detach().clone() for p in layer.parameters()]
    if unscale_first:
        scaler.unscale_(optimizer)
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(layer.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return before, [p.detach().clone() for p in layer.parameters()], real, scaler


def test_grad_scaler_runs_on_the_cpu_with_float16_and_step_does_not_unscale_twice():
    """Lesson 7: torch accepts GradScaler("cpu") with float16 autocast; after unscale_, step() does not divide again."""
    assert torch.amp.GradScaler("cpu").is_enabled()
    before, after, real, scaler = _scaled_step()
    assert scaler.get_scale() == 65536.0                       # no overflow: the step was taken
    for b, a, g in zip(before, after, real):
        torch.testing.assert_close(b - a, g)                   # SGD(lr=1): the update is the real gradient


def test_unscale_twice_or_after_step_is_an_error():
    """Lesson 7: a second unscale_ before update() is an error (so: once per optimizer step)."""
    layer = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(layer(torch.ones(1, 2)).sum()).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(optimizer)


def test_clipping_before_unscale_leaves_a_step_of_max_norm_over_the_scale():
    """Lesson 7: clipped before unscale_, the gradients that remain have the norm max_norm / 65536."""
    before, after, real, _ = _scaled_step(max_norm=1.0, unscale_first=False)
    update = torch.cat([(b - a).flatten() for b, a in zip(before, after)]).norm().item()
    assert torch.cat([g.flatten() for g in real]).norm().item() > 1e-3   # a real gradient larger than 1 / 65536
    assert update == pytest.approx(1.0 / 65536, rel=1e-3)
    before, after, _, _ = _scaled_step(max_norm=1.0, unscale_first=True)
    update = torch.cat([(b - a).flatten() for b, a in zip(before, after)]).norm().item()
    assert update == pytest.approx(min(1.0, torch.cat([g.flatten() for g in real]).norm().item()), rel=1e-3)


def _trainer_stand_in(shifts_labels):
    return types.SimpleNamespace(
        model_accepts_loss_kwargs=True, compute_loss_func=None, _loss_shifts_labels=shifts_labels,
        args=types.SimpleNamespace(average_tokens_across_devices=True, world_size=1, n_gpu=1),
        get_tp_size=lambda: 1, get_cp_size=lambda: 1, get_sp_size=lambda: 1)


def test_num_items_in_batch_counts_the_labels_that_are_not_minus_100():
    """Lessons 3 and 4: the Trainer counts the labels != -100 of all micro-batches of a step (for a causal
    language model, in labels[..., 1:])."""
    from transformers import Trainer
    micro_batches = [{"labels": torch.tensor([[1, 2, -100], [3, -100, -100]])}, {"labels": torch.tensor([[4, 5, 6]])}]
    count = Trainer._get_num_items_in_batch(_trainer_stand_in(False), micro_batches, torch.device("cpu"))
    assert int(count) == 6
    count = Trainer._get_num_items_in_batch(_trainer_stand_in(True), micro_batches, torch.device("cpu"))
    assert int(count) == 3


def test_the_trainer_clips_to_norm_1_by_default():
    """Lesson 3: the Trainer clips to norm 1 by default (lesson 4)."""
    from transformers import TrainingArguments
    assert TrainingArguments(output_dir="unused", report_to="none").max_grad_norm == 1.0


def _row(batch_size, learning_rate, steps, distance, loss):
    return {"batch_size": batch_size, "learning_rate": learning_rate, "steps": steps, "distance": distance,
            "validation_loss": loss}


@pytest.mark.parametrize("same_loss, scaled_loss, direction, which", [
    (0.2, 0.05, "(higher)", "is closer to the small batch's"),
    (0.2, 0.5, "(higher)", "is not closer to the small batch's"),
    (0.005, 0.02, "(lower or equal)", "is not closer to the small batch's"),
])
def test_the_batch_size_conclusion_follows_the_numbers(same_loss, scaled_loss, direction, which):
    """Lesson 3: the conclusion is written from the measured losses, not fixed."""
    rows = [_row(8, 5e-4, 24, 2.0, 0.01), _row(32, 5e-4, 6, 1.0, same_loss), _row(32, 2e-3, 6, 3.0, scaled_loss)]
    text = batch_scaling.batch_size_conclusion(rows)
    assert "6 steps instead of 24" in text and "moved 0.50 times as far" in text and direction in text
    assert which in text and "moved 1.50 times as far" in text


def test_distance_moved():
    layer = torch.nn.Linear(2, 2)
    start = {name: value.detach().clone() for name, value in layer.named_parameters()}
    with torch.no_grad():
        layer.weight += 3.0
        layer.bias -= 4.0 / 2 ** 0.5
    assert batch_scaling.distance_moved(start, layer) == pytest.approx((9 * 4 + 16) ** 0.5)


def test_the_mean_of_micro_batch_means_is_not_the_mean_over_the_group():
    """Lesson 3: a causal language model's loss is the mean over the predicted tokens of its batch (labels -100
    not counted); two micro-batches with 2 and 6 predicted tokens: the mean of their means is not the mean over
    the group, and the summed losses divided by the group's count (num_items_in_batch) are."""
    from transformers.loss.loss_utils import ForCausalLMLoss
    torch.manual_seed(0)
    vocab = 5
    labels = [torch.tensor([[1, 2, 3, -100, -100, -100, -100]]), torch.tensor([[4, 1, 2, 3, 4, 1, 2]])]
    logits = [torch.randn(1, 7, vocab) for _ in labels]
    counts = [int((label[..., 1:] != -100).sum()) for label in labels]
    assert counts == [2, 6]
    means = [ForCausalLMLoss(logit, label, vocab) for logit, label in zip(logits, labels)]
    whole = ForCausalLMLoss(torch.cat(logits), torch.cat(labels), vocab)        # one batch: the group's mean
    summed = sum(ForCausalLMLoss(logit, label, vocab, num_items_in_batch=torch.tensor(sum(counts)))
                 for logit, label in zip(logits, labels))
    torch.testing.assert_close(summed, whole)
    assert abs((means[0] + means[1]) / 2 - whole) > 1e-3
    torch.testing.assert_close(whole, (2 * means[0] + 6 * means[1]) / 8)
