"""helpers.measure_peak_memory measures real allocations of one optimizer step.

The claims: the peak grows with the micro-batch (activations), stays roughly flat across the
accumulation steps N at a fixed micro-batch, so accumulation at a fixed effective batch lowers it;
the resident set of the process agrees in kind; the caller's model is left as it was; and nothing
is written to stderr (nbgrader scores a cell 0 that does).
"""
import pytest
import torch

import helpers
from helpers import measure_peak_memory


@pytest.fixture(scope="module")
def setting():
    """Pairs of 29 to 33 tokens (those without circumstances): micro-batches that differ in number of
    examples, not in length (a batch holding the corpus' one 103-token pair would set the peak)."""
    tokenizer = helpers.load_tokenizer()
    data = helpers.tokenize_data(helpers.load_data(sizes={"train": 128, "validation": 8, "test": 8}), tokenizer)
    return helpers.load_model(), data["train"].filter(lambda row: len(row["input_ids"]) <= 33), tokenizer


def test_peak_grows_with_the_micro_batch(setting):
    model, dataset, tokenizer = setting
    peaks = [measure_peak_memory(model, dataset, tokenizer, size) for size in (4, 16, 64)]
    assert peaks[0] > 0
    assert peaks[0] < peaks[1] < peaks[2], peaks
    # small batches peak at Adam's step (gradients and optimizer state: fixed costs); from there
    # activations, linear in the examples, take over: 16x the batch is more than twice the memory
    assert peaks[2] > 2 * peaks[0], peaks


def test_peak_is_flat_across_accumulation_steps_at_a_fixed_micro_batch(setting):
    model, dataset, tokenizer = setting
    peaks = [measure_peak_memory(model, dataset, tokenizer, 16, n) for n in (1, 2, 4)]
    assert max(peaks) < 1.3 * min(peaks), peaks


def test_accumulation_lowers_the_peak_at_a_fixed_effective_batch(setting):
    model, dataset, tokenizer = setting
    whole = measure_peak_memory(model, dataset, tokenizer, 64, 1)
    accumulated = measure_peak_memory(model, dataset, tokenizer, 16, 4)
    assert accumulated < 0.5 * whole, (whole, accumulated)


def test_resident_set_agrees_in_kind(setting):
    model, dataset, tokenizer = setting
    small = measure_peak_memory(model, dataset, tokenizer, 4, method="rss")
    large = measure_peak_memory(model, dataset, tokenizer, 64, method="rss")
    exact = measure_peak_memory(model, dataset, tokenizer, 64)
    assert large > small + exact / 2, (small, large, exact)
    assert large > 0.5 * exact, (large, exact)


def test_model_is_left_as_it_was_and_stderr_stays_empty(setting, capfd):
    model, dataset, tokenizer = setting
    model.eval()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    measure_peak_memory(model, dataset, tokenizer, 8, 2)
    after = model.state_dict()
    assert all(torch.equal(before[key], after[key]) for key in before)
    assert not model.training
    assert capfd.readouterr().err == ""


def test_bad_arguments_say_what_is_wrong(setting):
    model, dataset, tokenizer = setting
    with pytest.raises(ValueError, match="needs that many"):
        measure_peak_memory(model, dataset, tokenizer, 64, 4)
    with pytest.raises(ValueError, match="method"):
        measure_peak_memory(model, dataset, tokenizer, 8, method="guess")
