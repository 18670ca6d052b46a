"""The course's central claim: accumulation over N micro-batches is the large-batch step.

Every path must give the same parameters as the plain loop at batch B. SGD, not Adam: Adam's
first step is nearly independent of the gradient's scale and would hide a wrong loss scale.
Dropout is off so that the forward passes are deterministic.
"""
import pytest
import torch
from torch.utils.data import SequentialSampler
from transformers import Trainer, TrainingArguments

import helpers

BATCH = 12  # divisible by every N below, so micro-batches are B / N
LEARNING_RATE = 0.5


def fresh_model():
    with helpers.quiet():
        return helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)


def trained_parameters(train, dataset, tokenizer, batch_size, **kwargs):
    model = fresh_model()
    loader = helpers.make_dataloader(dataset, tokenizer, batch_size)
    with helpers.quiet():
        train(model, loader, optimizer=sgd(model), progress=False, **kwargs)
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def assert_same_parameters(expected, actual, what):
    initial = dict(fresh_model().named_parameters())
    moved = max((expected[n] - initial[n]).abs().max().item() for n in expected)
    assert moved > 1e-3, "training must move the parameters, or this comparison proves nothing"
    for name in expected:
        assert torch.allclose(expected[name], actual[name], rtol=1e-4, atol=1e-5), (
            f"{what}: parameter {name} differs from the large-batch step by "
            f"{(expected[name] - actual[name]).abs().max().item():.2e}")


class InOrderTrainer(Trainer):
    """Trainer shuffles its training data; the comparison needs the plain loop's order."""

    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def trainer_parameters(dataset, tokenizer, n, tmp_path):
    model = fresh_model()
    optimizer = sgd(model)
    steps = helpers.optimizer_steps_per_epoch(-(-len(dataset) // (BATCH // n)), n)
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=BATCH // n,
                             gradient_accumulation_steps=n, num_train_epochs=1, max_grad_norm=0,
                             report_to="none", save_strategy="no", disable_tqdm=True, use_cpu=True)
    trainer = InOrderTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             optimizers=(optimizer, helpers.make_scheduler(optimizer, steps)))
    with helpers.quiet():
        trainer.train()
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def accelerate_path(model, loader, **kwargs):
    return helpers.train_accelerate(model, loader, cpu=True, **kwargs)


@pytest.fixture(scope="module", params=[BATCH, 30], ids=["one step", "shorter last window"])
def dataset(request, small_data):
    """BATCH examples: exactly one optimizer step. 30 examples: batches of 12, 12 and 6, and
    with N = 3 a last window of micro-batches of 4 and 2 examples."""
    return small_data["train"].select(range(request.param))


@pytest.fixture(scope="module")
def large_batch(dataset, tokenizer):
    return trained_parameters(helpers.train_pytorch, dataset, tokenizer, BATCH)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_accumulation_by_hand_equals_large_batch(n, dataset, tokenizer, large_batch):
    actual = trained_parameters(helpers.train_pytorch, dataset, tokenizer, BATCH // n,
                                gradient_accumulation_steps=n)
    assert_same_parameters(large_batch, actual, f"accumulation by hand, N={n}")


@pytest.mark.parametrize("n", [2, 3, 4])
def test_accelerator_accumulation_equals_large_batch(n, dataset, tokenizer, large_batch):
    actual = trained_parameters(accelerate_path, dataset, tokenizer, BATCH // n,
                                gradient_accumulation_steps=n)
    assert_same_parameters(large_batch, actual, f"Accelerator accumulate(), N={n}")


@pytest.mark.parametrize("n", [2, 3, 4])
def test_trainer_accumulation_equals_large_batch(n, dataset, tokenizer, large_batch, tmp_path):
    actual = trainer_parameters(dataset, tokenizer, n, tmp_path)
    assert_same_parameters(large_batch, actual, f"Trainer gradient_accumulation_steps={n}")


def two_process_run(dataset, tokenizer):
    """Runs in each of 2 processes: B/2 examples per process, gradients averaged by gloo."""
    model = fresh_model()
    loader = helpers.make_dataloader(dataset, tokenizer, BATCH // 2)
    with helpers.quiet():
        _, accelerator = helpers.train_accelerate(model, loader, optimizer=sgd(model), cpu=True,
                                                  progress=False)
    assert accelerator.num_processes == 2, "the launcher must start two processes"
    unwrapped = accelerator.unwrap_model(model)
    return {name: value.detach().clone() for name, value in unwrapped.named_parameters()}


def test_two_processes_equal_large_batch(small_data, tokenizer):
    dataset = small_data["train"].select(range(2 * BATCH))  # two full steps: no padding by Accelerate
    expected = trained_parameters(helpers.train_pytorch, dataset, tokenizer, BATCH)
    actual = helpers.run_on_processes(two_process_run, dataset, tokenizer, num_processes=2)
    assert_same_parameters(expected, actual, "2 processes at B/2 each")
