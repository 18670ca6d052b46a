"""Resuming: a run interrupted after 8 of 12 steps and resumed from its checkpoint ends with exactly
the weights of a run that was not interrupted, with dropout on and shuffled data; it does not
without skip_first_batches or with another data seed. The same for the Trainer."""
import pytest
import torch

import helpers
from helpers import resume
from helpers.exercises import fresh_accelerator_state, parameter_difference, parameters_of


@pytest.fixture(scope="module")
def data(tokenizer):
    with helpers.quiet():
        return helpers.tokenize_data(helpers.load_data(sizes={"train": 48, "validation": 8, "test": 8}),
                                     tokenizer)


def fresh(data, tokenizer):
    fresh_accelerator_state()
    torch.manual_seed(0)
    with helpers.quiet():
        model = helpers.load_model()  # dropout on: the random generators must be restored too
    return model, helpers.make_dataloader(data["train"], tokenizer, 8, shuffle=True)


@pytest.fixture(scope="module")
def uninterrupted(data, tokenizer, tmp_path_factory):
    model, loader = fresh(data, tokenizer)
    resume.train_resumable(model, loader, checkpoint_dir=tmp_path_factory.mktemp("full"), epochs=2,
                           progress=False)
    return parameters_of(model)


def interrupted_and_resumed(data, tokenizer, folder, **resume_options):
    model, loader = fresh(data, tokenizer)
    history, _ = resume.train_resumable(model, loader, checkpoint_dir=folder, epochs=2, save_every=4,
                                        stop_after=8, progress=False)
    assert history.optimizer_steps == 8
    model, loader = fresh(data, tokenizer)
    torch.manual_seed(123)  # a new process: another global random state
    history, _ = resume.train_resumable(model, loader, checkpoint_dir=folder, epochs=2, resume=True,
                                        progress=False, **{"data_seed": 0, **resume_options})
    return parameters_of(model), history


def test_resumed_run_ends_with_the_same_weights(data, tokenizer, uninterrupted, tmp_path):
    parameters, history = interrupted_and_resumed(data, tokenizer, tmp_path)
    assert history.optimizer_steps == 4, "6 batches per epoch, 2 epochs, 8 done: 4 left"
    assert parameter_difference(uninterrupted, parameters) == 0.0


@pytest.mark.parametrize("broken", [{"skip_batches": False}, {"data_seed": 1}], ids=["no-skip", "other-seed"])
def test_resume_without_its_parts_is_not_the_same(data, tokenizer, uninterrupted, tmp_path, broken):
    parameters, _ = interrupted_and_resumed(data, tokenizer, tmp_path, **broken)
    assert parameter_difference(uninterrupted, parameters) > 1e-5


def test_checkpoint_holds_model_optimizer_scheduler_and_random_states(data, tokenizer, tmp_path):
    model, loader = fresh(data, tokenizer)
    resume.train_resumable(model, loader, checkpoint_dir=tmp_path, save_every=6, progress=False)
    files = resume.checkpoint_bytes(tmp_path)
    assert {"model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"} <= set(files)
    model_bytes = sum(p.numel() * 4 for p in model.parameters())
    assert files["model.safetensors"] == pytest.approx(model_bytes, rel=0.01)
    assert files["optimizer.bin"] == pytest.approx(2 * model_bytes, rel=0.02), "AdamW: two moments"


def test_trainer_resumes_to_the_same_weights(data, tokenizer, tmp_path):
    def trainer(output_dir):
        torch.manual_seed(0)
        with helpers.quiet():
            model = helpers.load_model()
            made = helpers.make_trainer(model, tokenizer, data, output_dir=str(output_dir), epochs=2,
                                        batch_size=8, gradient_accumulation_steps=1, use_cpu=True,
                                        eval_strategy="no", logging_strategy="no", save_strategy="steps",
                                        save_steps=4, disable_tqdm=True)
        return model, made

    model, whole = trainer(tmp_path / "whole")
    with helpers.quiet():
        whole.train()
    model_cut, cut = trainer(tmp_path / "cut")
    cut.add_callback(resume.StopAfterSteps(8))
    with helpers.quiet():
        cut.train()
    assert cut.state.global_step == 8
    torch.manual_seed(123)
    model_resumed, resumed = trainer(tmp_path / "cut")
    with helpers.quiet():
        resumed.train(resume_from_checkpoint=str(tmp_path / "cut" / "checkpoint-8"))
    assert resumed.state.global_step == 12
    assert parameter_difference(model, model_resumed) == 0.0
    assert parameter_difference(model, model_cut) > 1e-5


def test_the_lessons_measurement_shows_what_resuming_with_and_without_skipping_gives(data, tokenizer, tmp_path):
    """helpers.measure_resume, which lesson 9 plots: 6 batches per epoch, 2 epochs, a crash after 5
    steps with the last checkpoint at 4: both resumed runs go on from step 4."""
    rows, checkpoint = resume.measure_resume(data["train"], tokenizer, tmp_path, batch_size=8, epochs=2,
                                             stop_after=5, save_every=4)
    runs = {row["run"]: row for row in rows}
    assert runs["uninterrupted"]["optimizer_steps"] == 12
    assert runs["resumed"]["optimizer_steps"] == 12 and runs["resumed"]["max_weight_difference"] == 0.0
    assert runs["resumed"]["loss"] == runs["uninterrupted"]["loss"]
    skipped_nothing = runs["resumed without skip_first_batches"]
    assert skipped_nothing["optimizer_steps"] == 4 + 6 + 6, "the 4 batches of epoch 1 are trained again"
    assert skipped_nothing["max_weight_difference"] > 1e-5
    assert {"model.safetensors", "optimizer.bin"} <= set(checkpoint)


def test_a_wrong_number_of_resumed_batches_is_named_by_its_cause():
    """Lesson 9's test of resume_training: 3 epochs of 6 batches, stopped after 8 steps (2 into epoch 1)."""
    def problem(batches):
        return resume.resumed_batches_problem(batches, stop_after=8, batches_per_epoch=6, epochs=3)

    assert problem(10) is None
    assert "counterpart of save_state" in problem(18)          # the checkpoint not loaded
    assert "were trained again" in problem(12)                 # no skip_first_batches
    assert "first batches of every epoch" in problem(8)        # skipped in every epoch
    assert "every epoch from 0" in problem(16)                 # range(epochs)
    assert problem(11).endswith("it should train the 10 left.")  # no cause guessed


def test_the_checkpoint_is_explained_in_sizes_of_its_weights():
    checkpoint = {"model.safetensors": 1000, "optimizer.bin": 2010, "scheduler.bin": 5, "random_states_0.pkl": 15}
    assert helpers.checkpoint_explained(checkpoint).endswith("together 20 bytes (0.020): 3.03 model sizes.")
