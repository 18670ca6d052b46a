"""Accuracy and F1, computed here with numpy (no metric script is fetched from a hub)."""
from collections import Counter

import numpy as np


def classification_metrics(predictions, labels):
    """Accuracy and F1 of the positive class (1 = paraphrase, as in MRPC).

    The same numbers as scikit-learn's `accuracy_score` and `f1_score(zero_division=0)`
    (tests/test_metrics.py compares them), without the half second its import costs a kernel:
    F1 = 2 TP / (2 TP + FP + FN) = 2 TP / (predicted positives + actual positives), and 0 when there
    are neither. Lesson 4 uses scikit-learn's functions itself.
    """
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if predictions.shape != labels.shape:
        raise ValueError(f"classification_metrics: {predictions.shape[0] if predictions.ndim else 0} predictions "
                         f"for {labels.shape[0] if labels.ndim else 0} labels")
    unknown = sorted(set(np.unique(predictions).tolist() + np.unique(labels).tolist()) - {0, 1})
    if unknown:
        raise ValueError(f"classification_metrics: labels are 0 and 1 here, not {unknown}")
    true_positives = int(np.sum((predictions == 1) & (labels == 1)))
    positives = int(np.sum(predictions == 1)) + int(np.sum(labels == 1))
    return {"accuracy": float(np.mean(predictions == labels)),
            "f1": 2 * true_positives / positives if positives else 0.0}


def compute_metrics(eval_pred):
    """For `Trainer(compute_metrics=...)`: turn logits into predictions, then score them."""
    logits, labels = eval_pred
    return classification_metrics(np.argmax(logits, axis=-1), labels)


def majority_class_accuracy(labels):
    """The accuracy of always answering the most common label: a trained model must beat it."""
    counts = Counter(int(label) for label in labels)
    if not counts:
        raise ValueError("majority_class_accuracy(labels=...): there are no labels")
    return max(counts.values()) / sum(counts.values())
