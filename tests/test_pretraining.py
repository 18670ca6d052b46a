"""The pre-trained default model: honest data, a pre-trained encoder with a new head, determinism."""
import dataclasses

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification

import helpers
from helpers import corpus, modeling, pretraining


def action_and_thing(sentence):
    """The (action, thing) combination a sentence of the corpus writes about."""
    words = sentence.split()
    actions = [index for index, ways in enumerate(corpus.ACTIONS)
               if any(way.split()[0] in words for way in ways)]
    things = [index for index, thing in enumerate(corpus.THINGS) if thing in words]
    assert len(actions) == len(things) == 1, sentence
    return actions[0], things[0]


@pytest.fixture(scope="module")
def pretraining_sentences():
    pairs = pretraining.make_pretraining_pairs(pretraining.SETTINGS.pairs, pretraining.SETTINGS.seed)
    return {sentence for a, b, _ in pairs for sentence in (a, b)}


def evaluation_sentences(seed):
    data = helpers.make_paraphrase_corpus({"train": 8}, seed=seed)
    return {s for split in corpus.EVALUATION_SPLITS for s in list(data[split]["sentence1"]) + list(data[split]["sentence2"])}


@pytest.mark.parametrize("seed", [0, 1])
def test_no_validation_or_test_sentence_occurs_in_the_pretraining_text(pretraining_sentences, seed):
    evaluation = evaluation_sentences(seed)
    assert not evaluation & pretraining_sentences
    # not by luck: every evaluation event is of a kind the pre-training text never writes about
    assert {action_and_thing(s) for s in evaluation} <= corpus.EVALUATION_COMBINATIONS
    assert not {action_and_thing(s) for s in pretraining_sentences} & corpus.EVALUATION_COMBINATIONS


def test_a_different_seed_alone_would_not_keep_the_splits_apart(pretraining_sentences):
    """Sentences recur across seeds: only the held-out combinations keep evaluation data new."""
    data = helpers.make_paraphrase_corpus()
    assert set(data["train"]["sentence1"]) & pretraining_sentences, (
        "the training split (another seed) shares sentences with the pre-training text; "
        "without such recurring sentences this test would prove nothing")
    training = set(data["train"]["sentence1"]) | set(data["train"]["sentence2"])
    assert not training & evaluation_sentences(0), "no validation or test sentence is a training sentence"


def test_default_model_has_the_pretrained_encoder_and_a_new_head():
    """As distilbert-base-cased's: the head (pooler + classifier, distilbert's pre_classifier +
    classifier) is new, every other weight is pre-trained."""
    folder = modeling.cache_dir() / "model"
    helpers.load_model()  # builds the cache on first use
    saved = load_file(folder / "model.safetensors")
    with helpers.quiet():
        _, info = AutoModelForSequenceClassification.from_pretrained(folder, output_loading_info=True)
    head = {"bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight", "classifier.bias"}
    assert set(info["missing_keys"]) == head, "only the head is new"
    model = helpers.load_model()
    encoder = {name: value for name, value in model.state_dict().items()
               if name.startswith("bert.") and name not in head}
    assert len(encoder) > 20 and all(torch.equal(value, saved[name]) for name, value in encoder.items()), (
        "every encoder weight comes from the pre-training")
    for layer in (model.bert.pooler.dense, model.classifier):
        assert layer.bias.abs().max() == 0 and 0.01 < layer.weight.std() < 0.03, (
            "the head starts as BERT initialises it: zero bias, weights of standard deviation 0.02")
    assert model.config.pretraining["steps"] == pretraining.SETTINGS.steps
    assert model.config.attention_probs_dropout_prob == 0.1, "fine-tuning gets BERT's dropout back"


def test_the_new_head_is_the_same_every_time_and_leaves_the_callers_random_numbers_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    first, second = helpers.load_model(), helpers.load_model()
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(first.classifier.weight, second.classifier.weight)
    assert not torch.equal(first.classifier.weight, helpers.load_model(seed=1).classifier.weight)


def test_two_fresh_builds_give_identical_weights(tmp_path, tokenizer, capsys):
    config = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **modeling.DEFAULT_CONFIG)
    settings = pretraining.PretrainingSettings(pairs=200, steps=3, batch_size=8, learning_rate=1e-3, seed=5)
    for build in ("first", "second"):
        pretraining.pretrain(tmp_path / build, tokenizer, config, settings)
    assert "pre-training the course's model" in capsys.readouterr().err, "a progress bar while it trains"
    first, second = (load_file(tmp_path / build / "model.safetensors") for build in ("first", "second"))
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)
    untrained = pretraining.pretrain(tmp_path / "other", tokenizer, config, dataclasses.replace(settings, steps=1),
                                     progress=False)
    assert not torch.equal(untrained.state_dict()["bert.embeddings.word_embeddings.weight"],
                           first["bert.embeddings.word_embeddings.weight"]), "training changed the weights"


def test_two_fresh_tokenizers_are_identical(tmp_path):
    for build in ("first", "second"):
        modeling._train_tokenizer(tmp_path / build)
    first, second = (helpers.load_tokenizer(str(tmp_path / build)) for build in ("first", "second"))
    assert first.get_vocab() == second.get_vocab(), "every token has the same number in both builds"


def test_masking_hides_only_ordinary_tokens(tokenizer):
    encoded = tokenizer(["Anna gave 3 books to Budi in Delft on Monday ."] * 64, return_special_tokens_mask=True,
                        return_tensors="pt")
    special = encoded["special_tokens_mask"].bool()
    masked, labels = pretraining.mask_tokens(encoded["input_ids"], special, tokenizer, torch.Generator().manual_seed(0))
    assert (labels[special] == -100).all() and torch.equal(masked[special], encoded["input_ids"][special])
    share = (labels != -100).sum() / (~special).sum()
    assert 0.1 < share < 0.2, f"BERT hides 15% of the tokens, here {share:.2f}"
    assert (masked[labels != -100] == tokenizer.mask_token_id).float().mean() > 0.7


def test_changed_facts_and_word_partners_are_labelled(tokenizer):
    a = "Anna then gave 3 books to Budi , in Delft on Monday ."
    b = "Budi then handed 5 books to Anna , in Delft on Monday as planned ."
    changed_a, changed_b = pretraining.changed_words(a, b)
    # swapped roles and another number are changed facts; "gave" / "handed" and the ending are not
    assert [w for w, c in zip(a.split(), changed_a) if c] == ["Anna", "3", "Budi"]
    assert [w for w, c in zip(b.split(), changed_b) if c] == ["Budi", "5", "Anna"]
    encoding = tokenizer(a, b).encodings[0]
    partner, fact = pretraining.word_targets(encoding, a, b)
    tokens = encoding.tokens
    lined_up = [(tokens[p], tokens[q]) for p, q in enumerate(partner) if q != -100]
    assert ("gave", "handed") in lined_up and ("handed", "gave") in lined_up and ("Delft", "Delft") in lined_up
    assert len(lined_up) == 2 * (len(a.split()) - 1), "every word but the final '.' has a partner"
    assert fact[tokens.index("[CLS]")] == -100 and fact[tokens.index("planned")] == 0
    assert sum(f == 1 for f in fact) == 6


def test_the_event_lines_up_after_circumstances(tokenizer):
    """A puts circumstances before the event, B after it: the event's words still pair up, the
    circumstances' words tell no fact and have no partner."""
    a = "After a long trip , on Monday in Delft , Anna then gave 3 books to Budi ."
    b = "On Monday in Delft , Anna then handed 3 books to Carla as planned , after a long trip ."
    changed_a, changed_b = pretraining.changed_words(a, b)
    assert [w for w, c in zip(a.split(), changed_a) if c] == ["Budi"], "'on' and 'On' are the same word"
    assert [w for w, c in zip(b.split(), changed_b) if c] == ["Carla"]
    encoding = tokenizer(a, b).encodings[0]
    partner, _ = pretraining.word_targets(encoding, a, b)
    tokens = encoding.tokens
    lined_up = {(tokens[p], tokens[q]) for p, q in enumerate(partner) if q != -100}
    assert {("on", "On"), ("gave", "handed"), ("Budi", "Carla"), ("Carla", "Budi")} <= lined_up
    assert not {pair for pair in lined_up if "trip" in pair or "planned" in pair}
    assert sum(q != -100 for q in partner) == 2 * (corpus.CORE_WORDS - 1)


def test_pretraining_batches_hold_pairs_of_similar_lengths():
    lengths = [3, 90, 4, 88, 5, 91, 6, 87] * 4
    batches = list(pretraining.similar_length_batches(lengths, 4, steps=8, generator=torch.Generator().manual_seed(0)))
    assert len(batches) == 8 and all(len(batch) == 4 for batch in batches)
    spreads = [max(lengths[row] for row in batch) - min(lengths[row] for row in batch) for batch in batches]
    mixed = sum(spread > 80 for spread in spreads)
    assert mixed <= 1, f"short and long pairs together in {mixed} batches (only where the sorted rows turn long)"
