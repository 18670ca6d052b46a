"""The generated corpus, the data-loading paths and their error messages."""
import statistics

import pytest
from datasets import DatasetDict

import helpers


def test_corpus_is_mrpc_shaped_and_deterministic():
    first = helpers.make_paraphrase_corpus({"train": 50, "validation": 10, "test": 10}, seed=3)
    again = helpers.make_paraphrase_corpus({"train": 50, "validation": 10, "test": 10}, seed=3)
    other = helpers.make_paraphrase_corpus({"train": 50, "validation": 10, "test": 10}, seed=4)
    assert list(first) == ["train", "validation", "test"]
    assert first["train"].column_names == ["sentence1", "sentence2", "label", "idx"]
    assert first["train"].to_dict() == again["train"].to_dict()
    assert first["train"].to_dict() != other["train"].to_dict()
    assert [len(first[s]) for s in first] == [50, 10, 10]


def test_corpus_is_not_a_keyword_lookup():
    """Both labels share the same vocabulary: a single word never tells the label."""
    train = helpers.make_paraphrase_corpus({"train": 2000})["train"]
    labels = train["label"]
    assert 0.55 < sum(labels) / len(labels) < 0.8, "roughly MRPC's share of paraphrases"
    words = {0: {}, 1: {}}
    for s1, s2, label in zip(train["sentence1"], train["sentence2"], labels):
        for word in set(f"{s1} {s2}".split()):
            words[label][word] = words[label].get(word, 0) + 1
    telling = [w for w in set(words[0]) | set(words[1])
               if min(words[0].get(w, 0), words[1].get(w, 0)) == 0 and max(words[0].get(w, 0), words[1].get(w, 0)) > 20]
    assert telling == [], f"words that appear with one label only: {telling}"


@pytest.fixture(scope="module")
def training_lengths(tokenizer):
    """(tokens of each pair, its label) in the default training split."""
    train = helpers.make_paraphrase_corpus()["train"]
    encoded = tokenizer(list(train["sentence1"]), list(train["sentence2"]))
    return [len(ids) for ids in encoded["input_ids"]], list(train["label"])


def test_lengths_spread_like_real_text(training_lengths):
    """As in MRPC, most pairs have a middling length and a few are long: the longest at least 3
    times the shortest, so that dynamic padding and batches of similar lengths pay off (lesson 0)."""
    lengths, _ = training_lengths
    shortest, longest, median = min(lengths), max(lengths), statistics.median(lengths)
    assert longest >= 3 * shortest, f"the pairs have {shortest} to {longest} tokens"
    tenth, *_, ninetieth = statistics.quantiles(lengths, n=10)
    assert ninetieth - tenth < (longest - shortest) / 2, "most pairs in the middle of the range"
    long = sum(length > 2 * median for length in lengths) / len(lengths)
    assert 0.005 < long < 0.05, f"a tail of long pairs: {long:.1%} are over twice the median ({median})"
    assert longest <= helpers.load_tokenizer().model_max_length, "no pair is cut by the default model's limit"


def test_length_does_not_tell_the_label(training_lengths):
    """The best threshold on the length alone does no better than guessing the majority label."""
    lengths, labels = training_lengths
    majority = max(sum(labels), len(labels) - sum(labels)) / len(labels)
    for threshold in sorted(set(lengths)):
        for longer_is in (0, 1):
            guessed = sum((length > threshold) == (label == longer_is) for length, label in zip(lengths, labels))
            assert guessed / len(labels) < majority + 0.02, (
                f"pairs longer than {threshold} tokens are mostly of label {longer_is}")
    means = [statistics.mean(length for length, label in zip(lengths, labels) if label == value) for value in (0, 1)]
    assert abs(means[0] - means[1]) < 1, f"mean tokens of label 0 and 1: {means}"


def test_small_data_is_padded(small_data, tokenizer):
    """The small data that the exactness tests (test_equivalence.py) train on is padded too."""
    for batch in helpers.make_dataloader(small_data["train"], tokenizer, batch_size=12):
        assert (batch["attention_mask"] == 0).any(), "every batch of 12 holds padding"


def test_paraphrases_keep_the_facts_and_non_paraphrases_change_them():
    train = helpers.make_paraphrase_corpus({"train": 300})["train"]
    numbers = lambda s: sorted(w for w in s.split() if w.isdigit())
    for row in train:
        if row["label"] == 1:
            assert numbers(row["sentence1"]) == numbers(row["sentence2"]), row
    changed = [row for row in train if row["label"] == 0]
    assert sum(row["sentence1"] != row["sentence2"] for row in changed) == len(changed)


def test_changes_column_names_what_a_non_paraphrase_changed():
    data = helpers.make_paraphrase_corpus({"train": 300}, with_changes=True)["train"]
    for row in data:
        changes = row["changes"].split("+") if row["changes"] else []
        assert (row["label"] == 1) == (changes == []), row
        assert set(changes) <= set(helpers.corpus.CHANGES) and len(changes) <= 2, row
    assert "changes" not in helpers.make_paraphrase_corpus({"train": 5})["train"].column_names


def test_load_data_reads_a_save_to_disk_folder(tmp_path):
    data = helpers.make_paraphrase_corpus({"train": 20, "validation": 5, "test": 5})
    data.save_to_disk(tmp_path / "mrpc")
    loaded = helpers.load_data(str(tmp_path / "mrpc"))
    assert isinstance(loaded, DatasetDict)
    assert loaded["train"].to_dict() == data["train"].to_dict()


@pytest.mark.parametrize("sizes", [{"train": 0}, {"validation": -3}, {"train": 2.5}])
def test_bad_sizes_name_the_split(sizes):
    split = next(iter(sizes))
    with pytest.raises(ValueError, match=rf"sizes\['{split}'\]"):
        helpers.load_data(sizes=sizes)


def test_unknown_data_name_says_what_works():
    with pytest.raises(ValueError, match=r"load_data\(name='no-such-data'\).*glue/mrpc"):
        helpers.load_data("no-such-data")


def test_hub_data_without_network_says_what_works():
    with pytest.raises(OSError, match=r"load_data\(name='glue/mrpc'\).*offline corpus"):
        helpers.load_data("glue/mrpc")


def test_missing_columns_are_named(tmp_path):
    data = helpers.make_paraphrase_corpus({"train": 5, "validation": 5, "test": 5})
    data = data.remove_columns("sentence2")
    data.save_to_disk(tmp_path / "broken")
    with pytest.raises(ValueError, match=r"lacks the columns \['sentence2'\]"):
        helpers.load_data(str(tmp_path / "broken"))


def test_empty_split_is_refused(tmp_path):
    data = helpers.make_paraphrase_corpus({"train": 5, "validation": 5, "test": 5})
    data["validation"] = data["validation"].select([])
    with pytest.raises(ValueError, match="'validation' is empty"):
        helpers.check_data(data)


def test_batches_are_padded_to_their_own_longest_pair(small_data, tokenizer):
    loader = helpers.make_dataloader(small_data["train"], tokenizer, batch_size=4)
    batch = next(iter(loader))
    lengths = batch["attention_mask"].sum(dim=1)
    assert batch["input_ids"].shape == (4, lengths.max().item())
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "labels"}


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_bad_batch_size_is_named(small_data, tokenizer, batch_size):
    with pytest.raises(ValueError, match="batch_size must be a whole number >= 1"):
        helpers.make_dataloader(small_data["train"], tokenizer, batch_size)
