"""Load a sentence-pair data set, tokenize it, and batch it with dynamic padding."""
from pathlib import Path

import torch
from datasets import DatasetDict, load_dataset, load_from_disk
from torch.utils.data import DataLoader
from transformers import DataCollatorWithPadding

from .checks import require_positive_int
from .corpus import make_paraphrase_corpus

REQUIRED_COLUMNS = ("sentence1", "sentence2", "label")
HUB_DATASETS = {"glue/mrpc": ("glue", "mrpc")}


def load_data(name=None, *, sizes=None, seed=0):
    """The course's data as a DatasetDict with train / validation / test splits.

    name=None: the generated, offline corpus (see `helpers.corpus`); `sizes` and `seed` shape it.
    name="glue/mrpc": GLUE MRPC from the Hugging Face Hub (needs a network the first time).
    name=<folder>: a DatasetDict written by `save_to_disk`.
    """
    if name is None:
        data = make_paraphrase_corpus(sizes, seed=seed)
    elif Path(name).is_dir():
        data = load_from_disk(name)
    elif name in HUB_DATASETS:
        try:
            data = load_dataset(*HUB_DATASETS[name])
        except (OSError, ConnectionError) as error:
            raise OSError(
                f"load_data(name={name!r}) could not download the data set: {error}. "
                "Without a network, use load_data() for the offline corpus, "
                "or a folder written by DatasetDict.save_to_disk."
            ) from error
    else:
        raise ValueError(
            f"load_data(name={name!r}): not a folder and not a known data set. "
            f"Use None (offline corpus), one of {sorted(HUB_DATASETS)}, or a save_to_disk folder."
        )
    check_data(data, where=f"load_data(name={name!r})")
    return data


def check_data(data, where="data"):
    """Fail early, with a clear message, on data the training code cannot use."""
    if not isinstance(data, DatasetDict):
        raise TypeError(f"{where}: expected a DatasetDict with train/validation splits, got {type(data).__name__}")
    for split in ("train", "validation"):
        if split not in data:
            raise ValueError(f"{where}: the split {split!r} is missing; the splits are {sorted(data)}")
        missing = [column for column in REQUIRED_COLUMNS if column not in data[split].column_names]
        if missing:
            raise ValueError(
                f"{where}: split {split!r} lacks the columns {missing}; "
                f"it has {data[split].column_names}, and needs {list(REQUIRED_COLUMNS)}"
            )
        if len(data[split]) == 0:
            raise ValueError(f"{where}: split {split!r} is empty")


def tokenize_data(data, tokenizer, max_length=128):
    """Tokenize every split in batches; keep only what the model takes (input ids, masks, labels)."""
    check_data(data, where="tokenize_data(data=...)")
    require_positive_int("max_length", max_length)

    def tokenize(batch):
        return tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, max_length=max_length)

    text_columns = [c for c in data["train"].column_names if c != "label"]
    tokenized = data.map(tokenize, batched=True, remove_columns=text_columns)
    tokenized = tokenized.rename_column("label", "labels")
    tokenized.set_format("torch")
    return tokenized


def make_dataloader(dataset, tokenizer, batch_size, *, shuffle=False, seed=0):
    """Batches of `batch_size` examples, each padded to its own longest pair (dynamic padding)."""
    require_positive_int("batch_size", batch_size)
    if len(dataset) == 0:
        raise ValueError("make_dataloader(dataset=...): the data set is empty")
    generator = torch.Generator().manual_seed(seed) if shuffle else None
    return DataLoader(
        dataset, batch_size=batch_size, shuffle=shuffle, generator=generator,
        collate_fn=DataCollatorWithPadding(tokenizer),
    )
