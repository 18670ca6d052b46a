"""The checks of lesson 0's exercises (data preparation): each returns None for a right answer, or a
message that says what is wrong (the test cells assert that it is None)."""
import torch

from .language import message


def tokenize_problem(tokenize_pairs, tokenizer, batch, max_length):
    """None when tokenize_pairs(batch, tokenizer, max_length) tokenizes each pair as the tokenizer does
    (two sentences, truncated to max_length, not padded); else what is wrong. The batch must hold a
    pair longer than max_length: otherwise a tokenize_pairs that cuts nothing would pass."""
    if max(len(row) for row in tokenizer(batch["sentence1"], batch["sentence2"])["input_ids"]) <= max_length:
        raise ValueError(f"tokenize_problem(max_length={max_length}): no pair of the batch is longer, so "
                         "truncation goes unchecked; give a smaller max_length or a longer pair")
    pairs = len(batch["sentence1"])
    result = tokenize_pairs(batch, tokenizer, max_length)
    if result is None:
        return message("tokenize_pairs returned None; return what the tokenizer returns.")
    if "input_ids" not in result:
        return message("The result has no input_ids (it has {keys}); return what the tokenizer returns.",
                       keys=sorted(result))
    rows = result["input_ids"]
    if len(rows) != pairs:
        return message("For a batch of {pairs} pairs you return {rows} rows of input_ids; return one row per pair: "
                       "pass the two lists of sentences, tokenizer(batch['sentence1'], batch['sentence2'], ...).",
                       pairs=pairs, rows=len(rows))
    rows = [list(row) for row in rows]
    if any(tokenizer.pad_token_id in row for row in rows):
        return message("Your rows hold padding: do not pad in map. The collator pads each training batch later, to "
                       "its own longest pair; padding here pads to the longest of the up to 1000 examples that map "
                       "passes at once (padding=True), or to max_length for every pair.")
    longest = max(len(row) for row in rows)
    if longest > max_length:
        return message("A row has {longest} tokens, more than max_length = {max_length}: cut longer pairs "
                       "(truncation=True, max_length=max_length).", longest=longest, max_length=max_length)
    separators = [row.count(tokenizer.sep_token_id) for row in rows]
    if any(count != 2 for count in separators) or "token_type_ids" in result and not all(
            1 in list(types) for types in result["token_type_ids"]):
        return message("The pairs are not tokenized as pairs: pass the two sentences as two arguments, "
                       "tokenizer(batch['sentence1'], batch['sentence2'], ...), so that each row is "
                       "[CLS] sentence1 [SEP] sentence2 [SEP] and token_type_ids marks the second sentence with 1.")
    expected = tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, max_length=max_length)
    for index, (row, right) in enumerate(zip(rows, expected["input_ids"])):
        if row != list(right):
            return message("Row {index} is {row}; tokenizer(sentence1, sentence2, truncation=True, "
                           "max_length={max_length}) gives {right}.", index=index, row=row, right=list(right),
                           max_length=max_length)
    return None


def padding_fraction_problem(padding_fraction):
    """None when padding_fraction(batches) is the share of padding tokens of all the batches together."""
    def batch(mask):
        mask = torch.tensor(mask)
        return {"input_ids": torch.where(mask.bool(), 7, 0), "attention_mask": mask,
                "labels": torch.zeros(len(mask), dtype=torch.long)}

    cases = [
        # 2 of 8, 0 of 10, 3 of 9: 5 of 27 tokens; the batches' own fractions average to 0.194
        [batch([[1, 1, 1, 1], [1, 1, 0, 0]]), batch([[1] * 10]), batch([[1, 1, 1], [1, 0, 0], [1, 1, 0]])],
        [batch([[1, 1], [1, 1], [1, 1]])],  # no padding at all
        [batch([[1, 0, 0, 0, 0, 0]]), batch([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]])],
    ]
    for batches in cases:
        padding = sum(int((b["attention_mask"] == 0).sum()) for b in batches)
        tokens = sum(b["attention_mask"].numel() for b in batches)
        expected = padding / tokens
        got = padding_fraction(batches)
        if not isinstance(got, float):
            return message("padding_fraction returned {got!r} ({kind}); return a Python float "
                           "(float(...) or .item()).", got=got, kind=type(got).__name__)
        if abs(got - expected) < 1e-9:
            continue
        where = message("For batches with {padding} padding tokens of {tokens} tokens in all, padding_fraction "
                        "returned {got:.4f}; it should be {expected:.4f}.", padding=padding, tokens=tokens, got=got,
                        expected=expected)
        fractions = [float((b["attention_mask"] == 0).float().mean()) for b in batches]
        if abs(got - (1 - expected)) < 1e-9:
            return where + " " + message("That is the share of real tokens: padding is where attention_mask is 0.")
        if abs(got - sum(fractions) / len(fractions)) < 1e-9:
            return where + " " + message("That is the mean of the batches' own fractions; the batches differ in "
                                         "size, so add up the padding tokens and all the tokens of every batch "
                                         "first, then divide once.")
        if abs(got - fractions[0]) < 1e-9:
            return where + " " + message("That is the fraction of the first batch only; count every batch.")
        return where
    return None


def padded_tokens(lengths, batches):
    """The tokens computed when each batch is padded to its longest example (padding included)."""
    return sum(max(lengths[i] for i in batch) * len(batch) for batch in batches)


def sorted_chunks(lengths, batch_size, reverse=False):
    """The example numbers sorted by length, cut into batches of batch_size (the last may be shorter)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=reverse)
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def grouping_problem(length_grouped_batches, lengths, batch_size):
    """None when length_grouped_batches(lengths, batch_size, seed) gives batches of similar lengths,
    every example once, in a shuffled order that the seed decides; else what is wrong."""
    def call(seed):
        return [[int(i) for i in batch] for batch in length_grouped_batches(lengths, batch_size, seed=seed)]

    batches = call(0)
    examples = sorted(i for batch in batches for i in batch)
    if examples != list(range(len(lengths))):
        missing = sorted(set(range(len(lengths))) - set(examples))
        twice = sorted({i for i in examples if examples.count(i) > 1})
        return message("Every example must be in exactly one batch: {missing} missing, {twice} more than once. "
                       "Sort the example numbers (indices), not the lengths, and keep the last, shorter batch.",
                       missing=missing[:8] or message("none"), twice=twice[:8] or message("none"))
    sizes = sorted(len(batch) for batch in batches)
    expected_sizes = sorted(len(batch) for batch in sorted_chunks(lengths, batch_size))
    if sizes != expected_sizes:
        return message("Your batches hold {sizes} examples; with {examples} examples and batch_size = {batch_size} "
                       "they should hold {expected} (only the last may be shorter).", sizes=sizes,
                       examples=len(lengths), batch_size=batch_size, expected=expected_sizes)
    most = max(padded_tokens(lengths, sorted_chunks(lengths, batch_size, reverse)) for reverse in (False, True))
    if padded_tokens(lengths, batches) > most:
        return message("Padded, your batches compute {tokens} tokens; batches of examples sorted by length compute "
                       "{most}. Put examples of similar length together: sort the example numbers by length, then "
                       "cut the sorted list into batches.", tokens=padded_tokens(lengths, batches), most=most)
    if call(0) != batches:
        return message("Two calls with seed=0 gave different batches: shuffle with random.Random(seed), not with "
                       "the global random module, so that a seed gives the same epoch again.")

    def longest_of(batches):
        return [max(lengths[i] for i in batch) for batch in batches]

    def in_order(longest):
        return len(set(longest)) > 2 and longest in (sorted(longest), sorted(longest, reverse=True))

    longest = longest_of(batches)
    # in order for 8 seeds: not a shuffle that happened to fall in order (1 in 3 for 3 batches, each seed)
    if all(in_order(longest_of(call(seed))) for seed in range(8)):
        return message("The batches go in order of length ({longest}): shuffle the order of the batches, or every "
                       "epoch trains on the short pairs first and the long ones last.", longest=longest)
    if all(call(seed) == batches for seed in (1, 2, 3)):
        return message("seed=0, 1, 2 and 3 gave the same order of batches: use the seed to shuffle them.")
    return None
