"""The course's model as `from_pretrained` gives it and a Trainer that takes the examples in order:
lesson 4's claims about the Trainer and num_items_in_batch compare one optimizer step's update
with them, on one process (test_trainer_accumulation.py, test_claims.py) and on two
(test_trainer_processes.py)."""
import torch
from torch.utils.data import SequentialSampler
from transformers import AutoModelForSequenceClassification, Trainer

import helpers
from helpers.modeling import cache_dir

BATCH = 8  # the examples of the optimizer step that the tests compare


class InOrderTrainer(Trainer):
    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def plain_model():
    """The course's model as from_pretrained gives it: without helpers' num_items_in_batch fix."""
    helpers.load_model()  # builds the cached folder once
    torch.manual_seed(0)  # the new classification head: the same in every compared run
    return AutoModelForSequenceClassification.from_pretrained(
        str(cache_dir() / "model"), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
