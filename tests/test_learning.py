"""The pre-trained default model learns the task within a lesson's budget, every kind of change."""
import pytest
import torch

import helpers
from helpers.corpus import CHANGES

pytestmark = pytest.mark.slow

# Lesson 1's default parameters (solutions/01_basic_loop): what a student's run trains on
LESSON = dict(sizes={"train": 256, "validation": 300, "test": 8}, batch_size=16, epochs=2, learning_rate=5e-4)


@pytest.fixture(scope="module")
def lesson_run(tokenizer):
    """Fine-tune as lesson 1 does; return accuracy before and after, and the predictions."""
    with helpers.quiet():
        data = helpers.load_data(sizes=LESSON["sizes"])
        changes = helpers.make_paraphrase_corpus(LESSON["sizes"], with_changes=True)["validation"]["changes"]
        tokenized = helpers.tokenize_data(data, tokenizer)
        model = helpers.load_model()
    torch.manual_seed(0)
    loader = helpers.make_dataloader(tokenized["train"], tokenizer, LESSON["batch_size"], shuffle=True)
    validation = helpers.make_dataloader(tokenized["validation"], tokenizer, 100)
    before = helpers.evaluate(model, validation)["accuracy"]
    helpers.train_pytorch(model, loader, epochs=LESSON["epochs"], learning_rate=LESSON["learning_rate"],
                          device="cpu", progress=False)
    after = helpers.evaluate(model, validation)["accuracy"]
    model.eval()
    with torch.no_grad():
        predictions = torch.cat([model(**batch).logits.argmax(-1) for batch in validation]).tolist()
    labels = list(tokenized["validation"].with_format(None)["labels"])
    return before, after, predictions, labels, changes


def test_a_lessons_run_reaches_85_percent_validation_accuracy(lesson_run):
    before, after, _, labels, _ = lesson_run
    majority = max(sum(labels), len(labels) - sum(labels)) / len(labels)
    print(f"validation accuracy: {before:.3f} before training, {after:.3f} after (majority class {majority:.3f})")
    assert before < majority + 0.05, "before training the new head knows nothing of the task"
    assert after >= 0.85, f"validation accuracy {after:.3f} after training (before: {before:.3f})"


def test_every_kind_of_change_is_mostly_caught(lesson_run):
    """Not one easy kind of change carrying the accuracy: each is caught in most pairs."""
    _, _, predictions, labels, changes = lesson_run
    right = {kind: [] for kind in ("paraphrase", *CHANGES)}
    for prediction, label, changed in zip(predictions, labels, changes):
        for kind in changed.split("+") if changed else ["paraphrase"]:
            right[kind].append(prediction == label)
    shares = {kind: sum(hits) / len(hits) for kind, hits in right.items()}
    print("right per kind of pair:", {kind: f"{share:.2f} of {len(right[kind])}" for kind, share in shares.items()})
    assert all(share >= 0.6 for share in shares.values()), shares
