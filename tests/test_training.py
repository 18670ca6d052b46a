"""The training loops: schedule in optimizer steps, history, progress, and clear errors."""
import math

import pytest
import torch

import helpers


def train(small_data, tokenizer, path, batch_size=4, n=1, epochs=1, **kwargs):
    model = helpers.load_model()
    loader = helpers.make_dataloader(small_data["train"], tokenizer, batch_size)
    with helpers.quiet():
        result = path(model, loader, epochs=epochs, gradient_accumulation_steps=n, progress=False, **kwargs)
    return result if isinstance(result, helpers.History) else result[0]


@pytest.mark.parametrize("path", [helpers.train_pytorch, helpers.train_accelerate])
@pytest.mark.parametrize("n", [1, 4])
def test_schedule_counts_optimizer_steps_and_ends_on_the_last_one(small_data, tokenizer, path, n):
    """60 examples, batches of 4: 15 batches; with N=4, 4 optimizer steps per epoch (the last shorter)."""
    peak, epochs = 1e-3, 3
    history = train(small_data, tokenizer, path, n=n, epochs=epochs, learning_rate=peak)
    total = math.ceil(15 / n) * epochs
    warmup = int(total * 0.1)
    assert history.optimizer_steps == total == len(history.learning_rate)
    assert history.learning_rate[warmup] == pytest.approx(peak), "warm-up ends after 10% of the optimizer steps"
    # linear decay that reaches 0 right after the last optimizer step: the last step uses 1/(total - warmup)
    assert history.learning_rate[-1] == pytest.approx(peak / (total - warmup))
    assert all(a >= b for a, b in zip(history.learning_rate[warmup:], history.learning_rate[warmup + 1:]))


def test_history_loss_falls_while_training(small_data, tokenizer):
    history = train(small_data, tokenizer, helpers.train_pytorch, epochs=4, learning_rate=1e-3)
    first, last = history.loss[:5], history.loss[-5:]
    assert sum(last) < sum(first), f"the loss should fall on data the model sees 4 times: {first} -> {last}"
    assert history.seconds > 0


def test_examples_per_window_counts_a_shorter_last_window():
    assert helpers.examples_per_window(30, 4, 3) == [12, 12, 6]
    assert helpers.examples_per_window(10, 4, 1) == [4, 4, 2]
    assert helpers.optimizer_steps_per_epoch(8, 3) == 3


@pytest.mark.parametrize("path", [helpers.train_pytorch, helpers.train_accelerate])
@pytest.mark.parametrize("argument, value", [("gradient_accumulation_steps", 0), ("epochs", -1),
                                             ("gradient_accumulation_steps", 1.5)])
def test_bad_arguments_are_named(small_data, tokenizer, path, argument, value):
    model = helpers.load_model()
    loader = helpers.make_dataloader(small_data["train"], tokenizer, 4)
    with pytest.raises(ValueError, match=f"{argument} must be a whole number >= 1"):
        path(model, loader, **{argument: value}, progress=False)


def test_labels_the_model_cannot_predict_are_named(small_data, tokenizer):
    three_labels = small_data["train"].map(lambda row: {"labels": 2}, remove_columns=["labels"])
    three_labels.set_format("torch")
    loader = helpers.make_dataloader(three_labels, tokenizer, 4)
    with pytest.raises(ValueError, match=r"num_labels=2.*load_model\(num_labels=3\)"):
        helpers.train_pytorch(helpers.load_model(), loader, progress=False)


def test_empty_dataloader_is_refused(small_data, tokenizer):
    with pytest.raises(ValueError, match="empty"):
        helpers.make_dataloader(small_data["train"].select([]), tokenizer, 4)


@pytest.mark.parametrize("train", [helpers.train_pytorch, helpers.train_accelerate])
def test_training_on_an_empty_dataloader_is_refused(small_data, train):
    """A DataLoader built by hand (not by make_dataloader) can be empty too: training says so."""
    empty = torch.utils.data.DataLoader(small_data["train"].select([]), batch_size=4)
    with pytest.raises(ValueError, match="dataloader is empty: there is nothing to train on"):
        train(helpers.load_model(), empty, progress=False)


def test_evaluate_reports_loss_accuracy_and_f1(small_data, tokenizer):
    model = helpers.load_model()
    metrics = helpers.evaluate(model, helpers.make_dataloader(small_data["validation"], tokenizer, 16))
    assert set(metrics) == {"loss", "accuracy", "f1"}
    assert 0 <= metrics["accuracy"] <= 1 and metrics["loss"] > 0


def test_compute_metrics_turns_logits_into_accuracy_and_f1():
    logits = torch.tensor([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]]).numpy()
    labels = torch.tensor([0, 1, 1, 1]).numpy()
    metrics = helpers.compute_metrics((logits, labels))
    assert metrics["accuracy"] == pytest.approx(0.75)
    assert metrics["f1"] == pytest.approx(0.8)  # precision 1, recall 2/3


def test_progress_bar_shows_optimizer_steps(small_data, tokenizer, capsys):
    model = helpers.load_model()
    loader = helpers.make_dataloader(small_data["train"], tokenizer, 4)
    helpers.train_pytorch(model, loader, gradient_accumulation_steps=4, progress=True)
    assert "4/4" in capsys.readouterr().err


def test_plot_history_draws_loss_and_learning_rate_per_path():
    histories = {"plain": helpers.History([0.7, 0.6, 0.5], [1e-3, 5e-4, 0.0]),
                 "accumulated": helpers.History([0.7, 0.5], [1e-3, 0.0])}
    figure = helpers.plot_history(histories)
    loss_axis, lr_axis = figure.axes
    labelled = [line.get_label() for line in loss_axis.lines if not line.get_label().startswith("_")]
    assert labelled == ["plain", "accumulated"], "each path's running mean, beside its faint raw loss"
    assert list(lr_axis.lines[0].get_ydata()) == [1e-3, 5e-4, 0.0]
