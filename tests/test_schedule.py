"""The course calls its training paths equivalent: they must use the same learning rate at every step.

N = 15 optimizer steps: not a multiple of 10, so a warm-up of int(0.1 * N) = 1 step (the slides,
the loops) and one of ceil(0.1 * N) = 2 steps (TrainingArguments(warmup_steps=0.1)) differ.
"""
import pytest

import helpers

EXAMPLES = 30


@pytest.fixture(scope="module")
def data(tokenizer):
    with helpers.quiet():
        return helpers.tokenize_data(helpers.load_data(sizes={"train": EXAMPLES, "validation": 8, "test": 8}),
                                     tokenizer)


def trainer_learning_rates(data, tokenizer, batch_size, n, tmp_path):
    """The learning rate of every optimizer step of make_trainer (logged before the scheduler steps)."""
    with helpers.quiet():
        trainer = helpers.make_trainer(helpers.load_model(), tokenizer, data, output_dir=str(tmp_path), epochs=1,
                                       batch_size=batch_size, gradient_accumulation_steps=n, use_cpu=True,
                                       eval_strategy="no", logging_strategy="steps", logging_steps=1,
                                       disable_tqdm=True)
        trainer.train()
    return [log["learning_rate"] for log in trainer.state.log_history if "loss" in log]


@pytest.mark.parametrize("batch_size, n", [(2, 1), (1, 2)], ids=["15 batches", "30 batches in pairs"])
def test_trainer_and_loops_share_the_schedule(data, tokenizer, batch_size, n, tmp_path):
    loader = helpers.make_dataloader(data["train"], tokenizer, batch_size)
    with helpers.quiet():
        by_hand = helpers.train_pytorch(helpers.load_model(), loader, gradient_accumulation_steps=n,
                                        device="cpu", progress=False)
        accelerated, _ = helpers.train_accelerate(helpers.load_model(), loader, gradient_accumulation_steps=n,
                                                  cpu=True, progress=False)
    trainer = trainer_learning_rates(data, tokenizer, batch_size, n, tmp_path)
    assert len(by_hand.learning_rate) == 15, "the test needs N = 15 optimizer steps"
    assert by_hand.learning_rate[0] == 0 and by_hand.learning_rate[1] > 0, "int(0.1 * 15) = 1 warm-up step"
    assert accelerated.learning_rate == pytest.approx(by_hand.learning_rate, abs=1e-12)
    assert trainer == pytest.approx(by_hand.learning_rate, abs=1e-12), (
        f"the Trainer's learning rates {trainer} differ from the loops' {by_hand.learning_rate}")


def test_make_trainer_refuses_a_schedule_it_would_ignore(data, tokenizer):
    with pytest.raises(ValueError, match="cannot take warmup_ratio"):
        helpers.make_trainer(helpers.load_model(), tokenizer, data, warmup_ratio=0.2)
