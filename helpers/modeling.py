"""The tokenizer and the sequence classifier: a small offline default, or any hub id or folder.

The default is a small BERT with a WordPiece tokenizer, both trained on generated text (see
`helpers.pretraining`). They are built the first time they are needed (the pre-training takes a
few minutes), saved with `save_pretrained` into a cache folder, and then loaded from it with the
same `from_pretrained` code that loads `distilbert-base-cased`: the pre-trained encoder, and a new
classification head.
"""
import functools

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedTokenizerFast

from .cache import build_once, cache_dir
from .checks import require_positive_int
from .pretraining import SETTINGS, make_pretraining_pairs, pretrain

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DEFAULT_CONFIG = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
                      intermediate_size=512, max_position_embeddings=128)


def _train_tokenizer(folder):
    text = make_pretraining_pairs(SETTINGS.pairs, SETTINGS.seed)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=False)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # WordPiece's trainer breaks ties in a random order (two builds differed); the text has few
    # words, so the vocabulary is every word whole plus single characters for unknown words
    words = {word for a, b, _ in text for sentence in (a, b)
             for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(sentence)}
    characters = {character for word in words for character in word}
    vocabulary = SPECIAL_TOKENS + sorted(words | characters | {f"##{c}" for c in characters})
    tokenizer.model = models.WordPiece({token: index for index, token in enumerate(vocabulary)}, unk_token="[UNK]")
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, model_max_length=DEFAULT_CONFIG["max_position_embeddings"],
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
        pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
    ).save_pretrained(folder)


def _build_model(folder):
    tokenizer = load_tokenizer()
    config = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **DEFAULT_CONFIG)
    pretrain(folder, tokenizer, config, SETTINGS)


def _from_pretrained(load, what, name):
    """Call a from_pretrained loader; explain failures in terms of the caller's argument."""
    try:
        return load(name)
    except OSError as error:
        raise OSError(
            f"{what}(name={name!r}) found no local folder of that name and could not load it "
            f"from the Hugging Face Hub ({type(error).__name__}). Offline, use {what}() for the "
            "course's default, or a folder written by save_pretrained."
        ) from error


def load_tokenizer(name=None):
    """The tokenizer for `name` (a hub id or a save_pretrained folder); None: the offline default."""
    if name is None:
        name = str(build_once(cache_dir() / "tokenizer", _train_tokenizer))
    return _from_pretrained(AutoTokenizer.from_pretrained, "load_tokenizer", name)


def load_model(name=None, num_labels=2, seed=0, **config_changes):
    """A sequence classifier for `name` (a hub id or a save_pretrained folder); None: the offline default.

    Weights the folder lacks (the new classification head) start from `seed`: every call gives
    the same model, and the caller's random numbers are left as they were.
    `config_changes` override config values, e.g. hidden_dropout_prob=0.0 to switch dropout off.
    """
    require_positive_int("num_labels", num_labels)
    if name is None:
        name = str(build_once(cache_dir() / "model", _build_model))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _from_pretrained(
            functools.partial(AutoModelForSequenceClassification.from_pretrained,
                              num_labels=num_labels, **config_changes),
            "load_model", name,
        )
    return count_loss_per_example(model)


def count_loss_per_example(model):
    """Make the model's loss honour Trainer's `num_items_in_batch`, so accumulation is exact.

    In transformers 5, sequence-classification heads accept **kwargs but ignore
    num_items_in_batch and return a mean loss. Trainer then skips its own division by the
    accumulation steps, and loss and gradients come out N times too large (upstream issue
    #47688). Here the loss becomes sum(cross-entropy) / num_items_in_batch, which is what
    Trainer expects when it passes that count, also for a shorter last window.
    """
    forward = model.forward

    @functools.wraps(forward)
    def forward_counting_examples(*args, num_items_in_batch=None, **kwargs):
        outputs = forward(*args, **kwargs)
        labels = kwargs.get("labels")
        if num_items_in_batch is not None and labels is not None:
            summed = torch.nn.functional.cross_entropy(
                outputs.logits.view(-1, model.config.num_labels), labels.view(-1), reduction="sum")
            outputs.loss = summed / num_items_in_batch
        return outputs

    model.forward = forward_counting_examples
    model.accepts_loss_kwargs = True
    return model
