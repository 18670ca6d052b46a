"""The offline default model and tokenizer, and the hub code path through local folders."""
import multiprocessing
import time

import pytest
import torch

import helpers


def test_default_model_is_a_small_two_label_classifier(tokenizer):
    model = helpers.load_model()
    assert model.config.num_labels == 2
    assert model.config.vocab_size == len(tokenizer)
    assert sum(p.numel() for p in model.parameters()) < 2_000_000
    encoded = tokenizer("Anna gave 3 books to Budi .", "Budi got 3 books from Anna .", return_tensors="pt")
    assert encoded["token_type_ids"][0].tolist().count(1) > 0, "the second sentence is marked as segment 1"


def test_default_model_is_the_same_every_time():
    first, second = helpers.load_model(), helpers.load_model()
    for (name, a), (_, b) in zip(first.named_parameters(), second.named_parameters()):
        assert torch.equal(a, b), name


def test_hub_code_path_loads_save_pretrained_folders(tmp_path, tokenizer):
    """load_model / load_tokenizer take a folder the way they take 'distilbert-base-cased'."""
    original = helpers.load_model()
    original.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    loaded = helpers.load_model(str(tmp_path / "model"))
    loaded_tokenizer = helpers.load_tokenizer(str(tmp_path / "model"))
    assert loaded_tokenizer("Anna gave 3 books .")["input_ids"] == tokenizer("Anna gave 3 books .")["input_ids"]
    for (name, a), (_, b) in zip(original.named_parameters(), loaded.named_parameters()):
        assert torch.equal(a, b), name


def test_unknown_model_offline_says_what_works():
    with pytest.raises(OSError, match=r"load_model\(name='no-such/model'\).*load_model\(\) for the course's default"):
        helpers.load_model("no-such/model")
    with pytest.raises(OSError, match=r"load_tokenizer\(name='no-such/model'\)"):
        helpers.load_tokenizer("no-such/model")


@pytest.mark.parametrize("num_labels", [0, -2, 1.5])
def test_bad_num_labels_is_named(num_labels):
    with pytest.raises(ValueError, match="num_labels must be a whole number >= 1"):
        helpers.load_model(num_labels=num_labels)


def test_loss_honours_num_items_in_batch(small_data, tokenizer):
    """What Trainer relies on: with num_items_in_batch the loss is a sum over that count."""
    model = helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    batch = next(iter(helpers.make_dataloader(small_data["train"], tokenizer, batch_size=4)))
    mean_loss = model(**batch).loss
    counted = model(**batch, num_items_in_batch=8).loss
    assert torch.allclose(counted, mean_loss * 4 / 8)


def test_a_built_cache_is_as_open_as_any_new_folder_and_file(tmp_path):
    """Other users read the cache (an instructor's graders, CI's unprivileged run): neither the
    private temporary folder it is built in nor safetensors' private files may stay private."""
    from safetensors.torch import save_file

    from helpers.cache import build_once

    def build(folder):
        (folder / "sub").mkdir()
        save_file({"weight": torch.zeros(2)}, folder / "sub" / "model.safetensors")

    built = build_once(tmp_path / "cache" / "model", build)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "file").write_text("")
    folder_mode, file_mode = ((tmp_path / "plain").stat().st_mode, (tmp_path / "plain" / "file").stat().st_mode)
    assert built.stat().st_mode == (built / "sub").stat().st_mode == folder_mode
    assert (built / "sub" / "model.safetensors").stat().st_mode == file_mode


def _build_slowly(folder, log):
    from helpers.cache import build_once

    def build(tmp):
        with open(log, "a") as f:
            f.write("built\n")
        time.sleep(1)
        (tmp / "done").write_text("")

    build_once(folder, build)


def test_processes_that_need_the_cache_at_once_build_it_once(tmp_path):
    """Lessons side by side, graders and tests wait for the one that builds (minutes for the model)."""
    # forked, not spawned: three Pythons importing torch took 12 s; a lock per open file is the same either way
    context = multiprocessing.get_context("fork")
    folder, log = tmp_path / "cache" / "model", tmp_path / "log"
    processes = [context.Process(target=_build_slowly, args=(folder, log)) for _ in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [process.exitcode for process in processes] == [0, 0, 0]
    assert log.read_text() == "built\n" and (folder / "done").exists()
