"""Lesson 0 (data preparation): its helpers, the checks of its exercises, and what its text claims
about datasets, transformers and accelerate (each claim test names the sentence it guards)."""
import ast
import inspect
import json
import random
import re

import pytest
import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.state import AcceleratorState
from datasets import Dataset, load_from_disk
from torch.utils.data import DataLoader
from transformers import DataCollatorWithPadding, Trainer, TrainingArguments
from papermill.inspection import inspect_notebook
from transformers.trainer_pt_utils import get_length_grouped_indices

import helpers
from course.paths import SOLUTIONS
from helpers import data_preparation, exercises_data

LESSON = SOLUTIONS / "00_data_preparation" / "00_data_preparation.ipynb"


def cells():
    return {cell["id"]: "".join(cell["source"]) for cell in json.loads(LESSON.read_text())["cells"]}


def lesson_parameters():
    """The defaults of the lesson's parameters cell, as papermill reads them."""
    return {name: ast.literal_eval(parameter["default"]) for name, parameter in inspect_notebook(LESSON).items()}


def solution(cell_id):
    """The function that the lesson's solution cell defines (its markers are comments)."""
    namespace = {"random": random, "torch": torch}
    exec(cells()[cell_id], namespace)
    name = re.search(r"^def (\w+)", cells()[cell_id], re.M).group(1)
    return namespace[name]


@pytest.fixture(scope="module")
def pairs():
    with helpers.quiet():
        return helpers.load_data(sizes={"train": 8, "validation": 8, "test": 8})["train"][:8]


# ---- exercise 1: tokenize_pairs ----

def tokenize(**options):
    def tokenize_pairs(batch, tokenizer, max_length):
        arguments = dict(truncation=True, max_length=max_length)
        arguments.update(options)
        return tokenizer(batch["sentence1"], batch["sentence2"], **arguments)
    return tokenize_pairs


def test_the_visible_test_pairs_differ_in_length(pairs, tokenizer):
    """Or padding=True in map (to the longest of map's batch) would leave them unpadded and pass."""
    assert len({len(ids) for ids in tokenizer(pairs["sentence1"], pairs["sentence2"])["input_ids"]}) > 1


def test_the_lessons_tokenize_pairs_passes(pairs, tokenizer):
    for max_length in (40, 16):
        assert exercises_data.tokenize_problem(solution("l0-tokenize-pairs"), tokenizer, pairs, max_length) is None


def test_tokenize_problem_refuses_a_batch_that_cannot_show_truncation(pairs, tokenizer):
    with pytest.raises(ValueError, match=r"max_length=128\): no pair of the batch is longer"):
        exercises_data.tokenize_problem(solution("l0-tokenize-pairs"), tokenizer, pairs, 128)


@pytest.mark.parametrize("wrong, says", [
    (lambda batch, tokenizer, max_length: None, "returned None"),
    (lambda batch, tokenizer, max_length: tokenizer(batch["sentence1"], truncation=True, max_length=max_length),
     "not tokenized as pairs"),
    (lambda batch, tokenizer, max_length: tokenizer([a + " " + b for a, b in zip(batch["sentence1"], batch["sentence2"])],
                                                    truncation=True, max_length=max_length), "not tokenized as pairs"),
    (tokenize(padding="max_length"), "hold padding"),
    (tokenize(padding=True), "hold padding"),
    (tokenize(truncation=False, max_length=None), "more than max_length = 40"),
    (lambda batch, tokenizer, max_length: tokenizer(" ".join(batch["sentence1"]), " ".join(batch["sentence2"])),
     "return one row per pair"),
    (tokenize(add_special_tokens=False), "not tokenized as pairs"),
])
def test_tokenize_problem_says_what_is_wrong(pairs, tokenizer, wrong, says):
    """The lesson's visible test (max_length 40) catches each of them: Validate says what is wrong."""
    problem = exercises_data.tokenize_problem(wrong, tokenizer, pairs, 40)
    assert problem is not None and says in problem, problem


# ---- exercise 2: padding_fraction ----

def test_the_lessons_padding_fraction_passes():
    assert exercises_data.padding_fraction_problem(solution("l0-padding-fraction")) is None


@pytest.mark.parametrize("wrong, says", [
    (lambda batches: sum(float(b["attention_mask"].sum()) for b in batches) / sum(b["attention_mask"].numel()
                                                                                 for b in batches), "real tokens"),
    (lambda batches: sum(float((b["attention_mask"] == 0).float().mean()) for b in batches) / len(batches),
     "mean of the batches' own fractions"),
    (lambda batches: sum(int((b["attention_mask"] == 0).sum()) for b in batches), "(int)"),
    (lambda batches: (batches[0]["attention_mask"] == 0).float().mean(), "(Tensor)"),
    (lambda batches: float((batches[0]["attention_mask"] == 0).float().mean()), "first batch only"),
    (lambda batches: sum(float((b["attention_mask"] == 0).sum()) for b in batches) / sum(len(b["labels"])
                                                                                        for b in batches),
     "it should be 0.1852"),
])
def test_padding_fraction_problem_says_what_is_wrong(wrong, says):
    problem = exercises_data.padding_fraction_problem(wrong)
    assert problem is not None and says in problem, problem


# ---- exercise 3: length_grouped_batches ----

_RANDOM = random.Random(1)
LENGTHS = [_RANDOM.randint(5, 60) for _ in range(50)]  # as in the lesson's visible test


def grouped(sort=True, shuffle="seeded", drop_last=False):
    def length_grouped_batches(lengths, batch_size, seed):
        order = sorted(range(len(lengths)), key=lambda i: lengths[i]) if sort else list(range(len(lengths)))
        end = len(order) - batch_size + 1 if drop_last else len(order)
        batches = [order[start:start + batch_size] for start in range(0, end, batch_size)]
        if shuffle == "seeded":
            random.Random(seed).shuffle(batches)
        elif shuffle == "global":
            random.shuffle(batches)
        elif shuffle == "fixed":
            random.Random(0).shuffle(batches)
        elif shuffle == "in order for seed 0" and seed != 0:
            random.Random(seed).shuffle(batches)
        return batches
    return length_grouped_batches


def test_the_lessons_length_grouped_batches_passes():
    assert exercises_data.grouping_problem(solution("l0-length-grouped-batches"), LENGTHS, 8) is None
    assert exercises_data.grouping_problem(grouped(), [7] * 20, 4) is None  # all equally long
    # a shuffle may fall in order by chance (1 in 3 with 3 batches): only an order that every seed keeps is wrong
    assert exercises_data.grouping_problem(grouped(shuffle="in order for seed 0"), LENGTHS, 8) is None


@pytest.mark.parametrize("wrong, says", [
    (grouped(shuffle=None), "in order of length"),
    (grouped(sort=False), "sorted by length compute"),
    (grouped(shuffle="global"), "Two calls with seed=0"),
    (grouped(drop_last=True), "missing"),
    (grouped(shuffle="fixed"), "gave the same order"),
    (lambda lengths, batch_size, seed: [sorted(lengths)[i:i + batch_size] for i in range(0, len(lengths), batch_size)],
     "more than once"),
    (lambda lengths, batch_size, seed: [list(range(i, min(i + batch_size + 1, len(lengths))))
                                        for i in range(0, len(lengths), batch_size + 1)], "should hold"),
])
def test_grouping_problem_says_what_is_wrong(wrong, says):
    problem = exercises_data.grouping_problem(wrong, LENGTHS, 8)
    assert problem is not None and says in problem, problem


def test_sorted_batches_leave_the_least_padding():
    """The bound of grouping_problem: random batches compute more tokens than sorted ones."""
    rng = random.Random(0)
    shuffled = list(range(len(LENGTHS)))
    rng.shuffle(shuffled)
    random_batches = [shuffled[i:i + 8] for i in range(0, len(shuffled), 8)]
    best = exercises_data.padded_tokens(LENGTHS, exercises_data.sorted_chunks(LENGTHS, 8))
    assert sum(LENGTHS) <= best < exercises_data.padded_tokens(LENGTHS, random_batches)


# ---- what the lesson prints: the wording follows the numbers ----

def test_map_conclusion_follows_the_numbers():
    assert "2.0 x as fast" in data_preparation.map_conclusion({"one at a time": 0.4, "batched": 0.2})
    assert "about as long" in data_preparation.map_conclusion({"one at a time": 0.2, "batched": 0.19})
    assert "slower this time" in data_preparation.map_conclusion({"one at a time": 0.2, "batched": 0.3})


def test_padding_conclusions_follow_the_numbers():
    fractions = {"wide": 0.5, "faster": 0.1, "same": 0.1, "slower": 0.1}
    times = {"wide": [1.0, 1.0, 1.0], "faster": [0.5, 0.6, 0.7], "same": [0.9, 1.1, 1.0], "slower": [1.2, 1.3, 1.1]}
    *lines, order = data_preparation.padding_conclusions(fractions, times).splitlines()
    assert [line.split(":")[0] for line in lines] == ["faster", "same", "slower"]
    assert "10.0 % padding instead of 50.0 % (wide)" in lines[0]
    assert "less time: 0.60 x (0.50 to 0.70)" in lines[0]
    assert "no clear difference" in lines[1] and "more time" in lines[2]
    assert order == "By time, from the longest epoch to the shortest: slower, wide, same, faster; not the order of the padding."
    table = data_preparation.padding_table(fractions, times)
    assert "50.0 %" in table and "0.60 x (0.50-0.70)" in table
    in_order = {"wide": [1.0] * 3, "faster": [0.7] * 3, "same": [0.6] * 3, "slower": [0.5] * 3}
    assert data_preparation.padding_conclusions(fractions, in_order).endswith("the same order as the padding.")


@pytest.mark.parametrize("fractions", [
    {"to max_length": 0.52, "longest": 0.71, "dynamic": 0.2, "similar": 0.1},    # the real tokens' share of some
    {"to max_length": 0.7, "longest": 0.6, "dynamic": 0.2, "similar": 1.5},      # not a share
    {"to max_length": 0.29, "longest": 0.35, "dynamic": 0.8, "similar": 0.93},   # the real tokens' share
])
def test_padding_conclusions_refuse_impossible_shares(fractions):
    """A padding_fraction that counts something else gives shares out of the order that holds for
    any data: the conclusions send the student back to exercise 2 instead of concluding."""
    times = {name: [1.0, 1.0] for name in fractions}
    conclusion = data_preparation.padding_conclusions(fractions, times)
    assert conclusion.startswith("These shares of padding are not possible") and "exercise 2" in conclusion


def test_epoch_times_leaves_the_weights_and_times_every_round(small_data, tokenizer):
    with helpers.quiet():
        model = helpers.load_model()
    before = [p.detach().clone() for p in model.parameters()]
    batches = list(helpers.make_dataloader(small_data["train"].select(range(8)), tokenizer, 4))
    times = data_preparation.epoch_times(model, {"a": batches, "b": batches[:1]}, repeats=2)
    assert set(times) == {"a", "b"} and all(len(t) == 2 and min(t) > 0 for t in times.values())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())


def test_time_map_times_both_ways(small_data):
    with helpers.quiet():
        seconds = data_preparation.time_map(helpers.load_data(sizes={"train": 16, "validation": 8, "test": 8})["train"],
                                            lambda batch: {"n": [1] * len(batch["label"])}
                                            if isinstance(batch["label"], list) else {"n": 1}, repeats=1)
    assert set(seconds) == {"one at a time", "batched"} and min(seconds.values()) > 0


def test_padding_strategies_of_the_lesson_rank_as_on_real_data(tokenizer):
    """Lesson 0 with its own parameters, on the course's data: max_length pads most, then the longest
    in the data set, then dynamic padding (at most half as much: one long pair sets the longest of the
    data set but only its own batch), then batches of similar lengths; as on real text."""
    parameters = lesson_parameters()
    with helpers.quiet():
        train = helpers.tokenize_data(helpers.load_data(sizes=parameters["sizes"]), tokenizer,
                                      max_length=parameters["max_length"])["train"]
    longest = max(len(ids) for ids in train["input_ids"])
    epoch = train.select(range(parameters["epoch_examples"]))
    lengths = [len(ids) for ids in epoch["input_ids"]]
    batch_size, dynamic = parameters["batch_size"], DataCollatorWithPadding(tokenizer)
    torch.manual_seed(0)
    loaders = [DataLoader(epoch, batch_size=batch_size, shuffle=True,
                          collate_fn=DataCollatorWithPadding(tokenizer, padding="max_length", max_length=length))
               for length in (parameters["max_length"], longest)]
    loaders += [DataLoader(epoch, batch_size=batch_size, shuffle=True, collate_fn=dynamic),
                DataLoader(epoch, batch_sampler=solution("l0-length-grouped-batches")(lengths, batch_size, 0),
                           collate_fn=dynamic)]
    to_max_length, to_longest, dynamic, similar = (solution("l0-padding-fraction")(list(loader)) for loader in loaders)
    assert to_max_length > to_longest > dynamic > similar, (to_max_length, to_longest, dynamic, similar)
    assert dynamic <= to_longest / 2, f"dynamic padding {dynamic:.3f}, to the longest {to_longest:.3f}"


def test_max_length_128_is_the_most_the_small_model_takes(tokenizer):
    """Lesson 0: "max_length tokens (here 128, the most our small model takes)"."""
    assert lesson_parameters()["max_length"] == 128
    with helpers.quiet():
        assert helpers.load_model().config.max_position_embeddings == 128 == tokenizer.model_max_length


# ---- two processes ----

EXPECTED_SHARDS = {  # 10 examples in batches of 4, two processes: the lesson's table
    "default": [[[0, 1, 2, 3], [8, 9, 0, 1]], [[4, 5, 6, 7], [2, 3, 4, 5]]],
    "split_batches=True": [[[0, 1], [4, 5], [8, 9]], [[2, 3], [6, 7], [0, 1]]],
    "even_batches=False": [[[0, 1, 2, 3], [8, 9]], [[4, 5, 6, 7]]],
    "Accelerator(split_batches=True)": [[[0, 1, 2, 3], [8, 9, 0, 1]], [[4, 5, 6, 7], [2, 3, 4, 5]]],
}


def test_two_processes_get_the_batches_the_lesson_describes():
    """Lesson 0: whole batches in turn by default; halves with split_batches; the last round filled
    from the start (even_batches) or left short; Accelerator(split_batches=True) changes nothing."""
    seen = helpers.batches_per_process(10, 4, num_processes=2)
    assert seen == EXPECTED_SHARDS
    table = helpers.process_batches_table(seen, 10)
    assert "more than once: [0, 1, 2, 3, 4, 5]" in table and "more than once: none" in table


def test_repeated_examples():
    assert data_preparation.repeated_examples(EXPECTED_SHARDS["split_batches=True"], 10) == [0, 1]
    assert data_preparation.repeated_examples(EXPECTED_SHARDS["even_batches=False"], 10) == []


def test_accelerator_never_reads_its_split_batches_argument():
    """Lesson 0: "The old Accelerator(split_batches=True) is still accepted, but the installed
    accelerate never reads it"; DataLoaderConfiguration(split_batches=True) does switch it on."""
    AcceleratorState._reset_state(reset_partial_state=True)
    try:
        assert Accelerator(cpu=True, split_batches=True).split_batches is False
        AcceleratorState._reset_state(reset_partial_state=True)
        configured = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(split_batches=True))
        assert configured.split_batches is True
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


# ---- what the lesson says about datasets and transformers ----

def test_map_batches_1000_examples_by_default():
    """Lesson 0: "one call per group of examples (batch_size=1000 by default)"."""
    assert inspect.signature(Dataset.map).parameters["batch_size"].default == 1000


def test_the_collator_pads_renames_label_and_cannot_pad_text(tokenizer):
    """Lesson 0: the collator pads to the batch's longest pair or to max_length, renames label to
    labels, and stops with "Unable to create tensor" on a text column."""
    rows = [dict(tokenizer("a b c", "d"), label=1), dict(tokenizer("a", "b"), label=0)]
    longest = max(len(row["input_ids"]) for row in rows)
    batch = DataCollatorWithPadding(tokenizer)(rows)
    assert batch["input_ids"].shape == (2, longest) and "labels" in batch and "label" not in batch
    assert DataCollatorWithPadding(tokenizer, padding="max_length", max_length=20)(rows)["input_ids"].shape == (2, 20)
    with pytest.raises(ValueError, match="Unable to create tensor"):
        DataCollatorWithPadding(tokenizer)([dict(row, sentence1="a b c") for row in rows])


def test_set_format_save_and_load(tmp_path, small_data):
    """Lesson 0: set_format("torch") gives tensors; save_to_disk writes Arrow files and two small JSON
    files per split; load_from_disk keeps the format."""
    split = small_data["train"].select(range(4))
    assert isinstance(split[0]["input_ids"], torch.Tensor)
    assert isinstance(split.with_format(None)[0]["input_ids"], list)
    split.save_to_disk(tmp_path / "split")
    names = sorted(path.name for path in (tmp_path / "split").iterdir())
    assert [name for name in names if name.endswith(".json")] == ["dataset_info.json", "state.json"]
    assert any(name.endswith(".arrow") for name in names)
    assert load_from_disk(tmp_path / "split").format["type"] == "torch"


def test_the_trainer_groups_by_length_with_a_sampling_strategy(tmp_path):
    """Lesson 0: train_sampling_strategy="group_by_length"; group_by_length=True is a TypeError in transformers 5."""
    with pytest.raises(TypeError, match="group_by_length"):
        TrainingArguments(output_dir=str(tmp_path), group_by_length=True)
    assert TrainingArguments(output_dir=str(tmp_path), train_sampling_strategy="group_by_length",
                             report_to="none").train_sampling_strategy == "group_by_length"


def test_length_grouped_sampler_uses_mega_batches_and_puts_the_longest_first():
    """Lesson 0: mega-batches of up to 50 batches (fewer in a small data set), each sorted by length,
    the longest pair first."""
    rng = random.Random(2)
    lengths = [rng.randint(1, 1000) for _ in range(2000)]
    indices = get_length_grouped_indices(lengths, 8, generator=torch.Generator().manual_seed(0))
    assert sorted(indices) == list(range(2000)) and lengths[indices[0]] == max(lengths)
    source = inspect.getsource(get_length_grouped_indices)
    assert "min(len(lengths) // (batch_size * 4), 50)" in source
    mega = indices[1:400]  # the first mega-batch (50 x 8), sorted longest first after its first element
    assert mega == sorted(mega, key=lambda i: lengths[i], reverse=True)


def test_the_trainer_pads_dynamically_by_default(tokenizer, tmp_path):
    """Lesson 0: given the tokenizer and no data_collator, the Trainer uses DataCollatorWithPadding."""
    with helpers.quiet():
        trainer = Trainer(model=helpers.load_model(), processing_class=tokenizer,
                          args=TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True))
    assert isinstance(trainer.data_collator, DataCollatorWithPadding)
