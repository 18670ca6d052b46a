"""What lesson 2 says about two processes, checked with two real gloo processes.

- The prepared dataloader gives each process whole batches in turn (split_batches=False):
  process 0 gets batches 0, 2, ..., process 1 gets batches 1, 3, ... (accelerate/data_loader.py,
  BatchSamplerShard), so one step of 2 processes learns from 2 x batch_size examples.
- The prepared model (DistributedDataParallel) averages the gradients in its backward pass:
  a plain `loss.backward()` gives the same update as one process with the double batch.
  `accelerator.backward` is still the right call, for accumulation, mixed precision and DeepSpeed.
"""
import torch
from accelerate import Accelerator

import helpers

PER_PROCESS_BATCH = 4
LEARNING_RATE = 0.5


def fresh_model():
    with helpers.quiet():
        return helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def train_with_plain_backward(dataset, tokenizer):
    """Runs in each process: SGD on the prepared model, with loss.backward() instead of accelerator.backward."""
    model = fresh_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    loader = helpers.make_dataloader(dataset, tokenizer, PER_PROCESS_BATCH)
    accelerator = Accelerator(cpu=True)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    scheduler = helpers.make_scheduler(optimizer, len(loader))  # not prepared: one step per optimizer step
    seen = []
    for batch in loader:
        optimizer.zero_grad()
        seen.append(batch["input_ids"].tolist())
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        scheduler.step()
    assert accelerator.num_processes == 2, "the launcher must start two processes"
    parameters = {name: value.detach().clone() for name, value in accelerator.unwrap_model(model).named_parameters()}
    return seen, type(model).__name__, parameters


def test_two_processes_take_whole_batches_in_turn_and_the_prepared_model_averages(small_data, tokenizer):
    dataset = small_data["train"].select(range(4 * PER_PROCESS_BATCH))
    seen, model_type, parameters = helpers.run_on_processes(train_with_plain_backward, dataset, tokenizer,
                                                            num_processes=2)
    batches = [batch["input_ids"].tolist() for batch in helpers.make_dataloader(dataset, tokenizer, PER_PROCESS_BATCH)]
    assert seen == [batches[0], batches[2]], "process 0 should get whole batches 0 and 2"
    assert model_type == "DistributedDataParallel"

    model = fresh_model()
    with helpers.quiet():
        helpers.train_pytorch(model, helpers.make_dataloader(dataset, tokenizer, 2 * PER_PROCESS_BATCH),
                              optimizer=torch.optim.SGD(model.parameters(), lr=LEARNING_RATE),
                              device="cpu", progress=False)
    for name, value in model.named_parameters():
        assert torch.allclose(value, parameters[name], rtol=1e-4, atol=1e-6), (
            f"{name}: loss.backward() on 2 processes differs from one process with the double batch")
