"""helpers.classification_metrics: numpy's accuracy and F1 are scikit-learn's, to the last bit."""
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from helpers import classification_metrics


def cases():
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 300):
        for _ in range(20):
            yield rng.integers(0, 2, size), rng.integers(0, 2, size)
    yield np.zeros(5, int), np.zeros(5, int)          # no positives at all: F1 0 (zero_division=0)
    yield np.ones(5, int), np.zeros(5, int)           # only false positives
    yield np.zeros(5, int), np.ones(5, int)           # only false negatives
    yield np.ones(4, int), np.ones(4, int)            # all right


@pytest.mark.parametrize("predictions, labels", list(cases()))
def test_the_same_numbers_as_scikit_learn(predictions, labels):
    assert classification_metrics(predictions, labels) == {
        "accuracy": accuracy_score(labels, predictions), "f1": f1_score(labels, predictions, zero_division=0)}


def test_labels_other_than_0_and_1_and_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match=r"\[2\]"):
        classification_metrics([0, 2], [0, 1])
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        classification_metrics([0, 1, 1], [0, 1])
