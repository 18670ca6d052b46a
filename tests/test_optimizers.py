"""Optimizer-state memory, measured from the optimizer's own state: AdamW keeps 8 bytes per
parameter, Adafactor far fewer, bitsandbytes' 8-bit AdamW about 2 (a quarter of AdamW's).
Nothing here imports bitsandbytes into the test process (it would stop run_on_processes)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers.optimization import Adafactor

import helpers
from course.paths import ROOT
from helpers import optimizers


def one_step(name, model):
    optimizer = optimizers.make_optimizer(name, model.parameters(), 1e-3)
    model(torch.randn(4, model[0].in_features)).sum().backward()
    optimizer.step()
    return optimizer


def model_of(width=256):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 2))


def test_adamw_keeps_two_float32_moments_per_parameter():
    model = model_of()
    optimizer = one_step("adamw", model)
    tensors = len(list(model.parameters()))
    parameters = optimizers.count_parameters(model.parameters())
    # two moments of 4 bytes, and a float32 step counter per tensor
    assert optimizers.optimizer_state_bytes(optimizer) == 8 * parameters + 4 * tensors
    assert optimizers.state_bytes_per_parameter(optimizer) == pytest.approx(8, abs=0.01)


def test_adafactor_factors_the_second_moment_of_matrices():
    model = model_of()
    optimizer = one_step("adafactor", model)
    assert isinstance(optimizer, Adafactor)
    # a 256 x 256 matrix keeps 256 + 256 numbers, a bias keeps its own 256 (plus a 4-byte RMS each)
    expected = 4 * ((256 + 256) + 256 + (2 + 256) + 2) + 4 * 4
    assert optimizers.optimizer_state_bytes(optimizer) == expected
    assert optimizers.state_bytes_per_parameter(optimizer) < 0.1


# In a child process: after importing bitsandbytes, run_on_processes cannot start processes
EIGHT_BIT = """
import json, torch, helpers
from helpers import optimizers
one = torch.nn.Sequential(torch.nn.Linear(256, 256))
two = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 256))
stepped = {}
for name, model in (("one", one), ("two", two)):
    stepped[name] = optimizers.make_optimizer("adamw_8bit", model.parameters(), 1e-3)
    model(torch.randn(4, 256)).sum().backward()
    stepped[name].step()
state = stepped["one"].state[one[0].weight]
print(json.dumps({"dtypes": [str(state["state1"].dtype), str(state["state2"].dtype)],
                  "bytes_per_parameter": optimizers.state_bytes_per_parameter(stepped["one"]),
                  "bytes_of_two_layers": optimizers.optimizer_state_bytes(stepped["two"])}))
"""


@pytest.fixture(scope="module")
def eight_bit():
    """What EIGHT_BIT measured in a child process."""
    reason = optimizers.eight_bit_unavailable()
    if reason:
        pytest.skip(reason)
    run = subprocess.run([sys.executable, "-c", EIGHT_BIT], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a Python that imports torch, bitsandbytes and helpers: 8 CPU s
def test_8bit_adamw_keeps_about_2_bytes_per_parameter(eight_bit):
    assert eight_bit["dtypes"] == ["torch.uint8", "torch.uint8"]
    assert 2 < eight_bit["bytes_per_parameter"] < 2.5


@pytest.mark.slow  # the same child process as above
def test_8bit_state_counts_the_shared_quantisation_maps_once(eight_bit):
    """bitsandbytes gives every 8-bit state the same two maps (qmap1, qmap2: 256 float32 each)."""
    weight = 2 * 256 * 256 + 2 * (256 * 256 // 256) * 4  # two 8-bit moments, a float32 scale per block of 256
    bias = 2 * 256 * 4  # under 4096 numbers: two float32 moments
    maps = 2 * 256 * 4  # once, not once per weight matrix
    assert eight_bit["bytes_of_two_layers"] == 2 * weight + 2 * bias + maps


def test_a_passed_8bit_probe_is_remembered_and_a_failed_one_is_run_again(monkeypatch, tmp_path):
    """The probe's child imports torch and bitsandbytes (about 4 CPU s, lesson 8's slowest cell): a pass is
    written into the cache folder, for this Python, versions and device type; a failure is not."""
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    outcome, probes = {"cpu": 0, "cuda": 1}, []

    def probe(command, **options):
        probes.append(command[-1])
        return subprocess.CompletedProcess(command, outcome[command[-1]], "", "RuntimeError: no CUDA kernels\n")

    monkeypatch.setattr(optimizers.subprocess, "run", probe)
    optimizers._eight_bit_probe.cache_clear()
    try:
        assert optimizers.eight_bit_unavailable("cpu") is None
        optimizers._eight_bit_probe.cache_clear()  # a new process: only the cache folder remembers
        assert optimizers.eight_bit_unavailable("cpu") is None
        assert probes == ["cpu"]
        for _ in range(2):
            optimizers._eight_bit_probe.cache_clear()
            assert "no CUDA kernels" in optimizers.eight_bit_unavailable("cuda")
        assert probes == ["cpu", "cuda", "cuda"]
        [record] = (tmp_path / helpers.cache.DEFAULT_VERSION / "eight-bit-probe").iterdir()
        assert "device cpu" in record.read_text() and torch.__version__ in record.read_text()
    finally:
        optimizers._eight_bit_probe.cache_clear()


def test_a_read_only_cache_leaves_the_probe_unrecorded_but_answered(monkeypatch, tmp_path):
    """The grader's and the hub's kernels read the model cache from a read-only file system, where
    even unlinking a file that is not there fails (EROFS): the probe still answers, and lesson 8's
    cells run instead of stopping with OSError."""
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    monkeypatch.setattr(optimizers.subprocess, "run",
                        lambda command, **options: subprocess.CompletedProcess(command, 0, "", ""))

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Path, "mkdir", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    optimizers._eight_bit_probe.cache_clear()
    try:
        assert optimizers.eight_bit_unavailable("cpu") is None
    finally:
        optimizers._eight_bit_probe.cache_clear()


def test_the_default_model_with_each_optimizer(tokenizer, small_data):
    rows = {row["optimizer"]: row for row in optimizers.compare_optimizers(
        small_data["train"], tokenizer, names=("adamw", "adafactor"), batch_size=16, progress=False)}
    assert rows["adamw"]["bytes_per_parameter"] == pytest.approx(8, abs=0.01)
    assert rows["adafactor"]["bytes_per_parameter"] < rows["adamw"]["bytes_per_parameter"] / 4
    for row in rows.values():
        assert row["final_loss"] < 1.0 and len(row["loss"]) == 4


def test_trainer_optim_adafactor_builds_the_same_optimizer(tokenizer, small_data, tmp_path):
    with helpers.quiet():
        trainer = helpers.make_trainer(helpers.load_model(), tokenizer, small_data, output_dir=str(tmp_path),
                                       optim="adafactor", use_cpu=True)
        optimizer = trainer.create_optimizer()
    assert isinstance(optimizer, Adafactor)
    group = optimizer.param_groups[0]
    assert not group["relative_step"] and not group["scale_parameter"] and group["lr"] == 5e-4


def test_unknown_optimizer_is_named():
    with pytest.raises(ValueError, match="adamw_8bit"):
        optimizers.make_optimizer("adam8", model_of().parameters())


def test_every_optimizer_trains_on_one_device_and_each_row_names_it(tokenizer, small_data, monkeypatch):
    """On a GPU machine all three train on cuda (the table's seconds compare); no GPU is needed to
    check it: the training is recorded, not run, and 8-bit AdamW is a plain AdamW here."""
    devices = []

    def recording_train(model, loader, *, device, **training):
        devices.append(torch.device(device).type if device is not None else None)
        return helpers.History(loss=[0.5], seconds=1.0)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(optimizers, "train_pytorch", recording_train)
    monkeypatch.setattr(optimizers, "make_optimizer", lambda name, parameters, lr: torch.optim.AdamW(parameters, lr))
    monkeypatch.setattr(optimizers, "eight_bit_unavailable", lambda *device: None)
    rows = optimizers.compare_optimizers(small_data["train"], tokenizer, progress=False)
    assert devices == ["cuda", "cuda", "cuda"]
    assert [row["device"] for row in rows] == ["cuda", "cuda", "cuda"]
    rows = optimizers.compare_optimizers(small_data["train"], tokenizer, device="cpu", progress=False)
    assert devices[3:] == ["cpu", "cpu", "cpu"] and {row["device"] for row in rows} == {"cpu"}


def test_compare_optimizers_trains_the_model_of_the_lesson(tokenizer, small_data, monkeypatch):
    """Lesson 8 with model_name="distilbert-base-cased" tokenizes with its tokenizer: the model must be the same
    one (the offline model's embeddings are smaller than that vocabulary)."""
    names, model = [], optimizers.load_model()
    monkeypatch.setattr(optimizers, "load_model", lambda name=None: names.append(name) or model)
    monkeypatch.setattr(optimizers, "train_pytorch", lambda *args, **kw: helpers.History(loss=[0.5], seconds=1.0))
    optimizers.compare_optimizers(small_data["train"], tokenizer, names=("adamw",), model_name="a/model",
                                  device="cpu", progress=False)
    assert names == ["a/model"]
