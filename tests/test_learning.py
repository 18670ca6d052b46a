"""The default data and model make a real learning problem, learnable in CPU minutes."""
import torch

import helpers
from course.compare import FAST


def test_fast_settings_reach_85_percent_validation_accuracy(tokenizer):
    with helpers.quiet():
        data = helpers.tokenize_data(helpers.load_data(sizes=FAST["sizes"]), tokenizer)
        torch.manual_seed(0)
        model = helpers.load_model()
    loader = helpers.make_dataloader(data["train"], tokenizer, FAST["batch_size"], shuffle=True)
    validation = helpers.make_dataloader(data["validation"], tokenizer, 128)
    before = helpers.evaluate(model, validation)["accuracy"]
    helpers.train_pytorch(model, loader, epochs=FAST["epochs"], learning_rate=FAST["learning_rate"],
                          progress=False)
    after = helpers.evaluate(model, validation)["accuracy"]
    labels = list(data["validation"].with_format(None)["labels"])
    share_of_paraphrases = sum(labels) / len(labels)
    print(f"validation accuracy: {before:.3f} before training, {after:.3f} after")
    assert after >= 0.85, f"validation accuracy {after:.3f} after training (before: {before:.3f})"
    assert after > share_of_paraphrases + 0.1, "better than always answering 'paraphrase'"
