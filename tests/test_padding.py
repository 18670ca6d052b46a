"""Lessons 1 and 3 teach dynamic padding and why the attention mask matters: both must be real.

MRPC pairs differ in length, so its batches hold padding. The default offline corpus must too,
or a lesson run never pads and its claims about padding are never put to the test.
"""
import torch

import helpers


def test_default_corpus_pairs_differ_in_length(small_data, tokenizer):
    lengths = {len(ids) for ids in small_data["train"]["input_ids"]}
    assert len(lengths) > 1, f"every tokenized pair has {lengths} tokens: nothing is ever padded"
    batch = next(iter(helpers.make_dataloader(small_data["train"], tokenizer, batch_size=16)))
    assert (batch["attention_mask"] == 0).any(), "a batch of 16 default pairs holds no padding"


def test_attention_mask_makes_padding_harmless(small_data, tokenizer):
    """A pair padded with 10 [PAD] tokens gives the same logits as the pair alone, with its mask."""
    with helpers.quiet():
        model = helpers.load_model().eval()
    example = {key: small_data["train"][0][key] for key in ("input_ids", "token_type_ids", "attention_mask")}
    alone = tokenizer.pad([example], return_tensors="pt")
    padded = tokenizer.pad([example], padding="max_length", max_length=len(example["input_ids"]) + 10,
                           return_tensors="pt")
    assert (padded["attention_mask"] == 0).sum() == 10
    with torch.no_grad():
        logits_alone = model(**alone).logits
        logits_padded = model(**padded).logits
        no_mask = {key: value for key, value in padded.items() if key != "attention_mask"}
        logits_unmasked = model(**no_mask).logits
    assert torch.allclose(logits_alone, logits_padded, atol=1e-5), "with the mask, padding changed the logits"
    assert not torch.allclose(logits_alone, logits_unmasked, atol=1e-3), (
        "without the mask the padding should change the logits, or this test proves nothing")
