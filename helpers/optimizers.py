"""Optimizers and what they keep in memory: AdamW, Adafactor and 8-bit AdamW.

Besides the weights and the gradients, an optimizer keeps state for every parameter. AdamW keeps
two float32 moments (8 bytes per parameter); Adafactor (`transformers.optimization.Adafactor`)
keeps, for a matrix, only a mean per row and per column of the second moment, and no first
moment; bitsandbytes' AdamW8bit keeps both moments in 8 bits, in blocks with a float32 scale.
The bytes are measured from the optimizer's own state (`optimizer_state_bytes`), not computed.
"""
import contextlib
import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from dataclasses import dataclass

import torch
from transformers.optimization import Adafactor

from .cache import cache_dir
from .data import make_dataloader
from .language import message
from .modeling import load_model
from .quiet import quiet
from .training import default_device, train_pytorch

OPTIMIZERS = ("adamw", "adafactor", "adamw_8bit")


def eight_bit_unavailable(device=None):
    """None when bitsandbytes' AdamW8bit can train on `device` (default: `default_device()`); else
    the reason, in words.

    The probe runs in a child process: once a process has imported bitsandbytes, accelerate's
    notebook_launcher (helpers.run_on_processes) refuses to start processes from it. The child
    imports torch and bitsandbytes (about 4 CPU seconds), so a probe that passed is remembered in
    the cache folder (`helpers.cache.cache_dir()`), for this Python, these versions of torch and
    bitsandbytes, this kind of machine and device; a probe that failed is run again next time.
    """
    return _eight_bit_probe(torch.device(device or default_device()).type)


@functools.lru_cache(maxsize=None)
def _eight_bit_probe(device_type):
    record = _passed_probe_record(device_type)
    if record is not None and record[0].exists():
        return None
    probe = subprocess.run([sys.executable, "-c", _PROBE, device_type], capture_output=True, text=True)
    if probe.returncode == 0:
        if record is not None:
            _write_whole(*record)
        return None
    lines = probe.stderr.strip().splitlines() or ["no output"]
    return f"bitsandbytes' AdamW8bit does not run on this machine's {device_type} ({lines[-1]})"


_PROBE = """
import os, sys, torch, bitsandbytes
layer = torch.nn.Linear(64, 64).to(sys.argv[1])
optimizer = bitsandbytes.optim.AdamW8bit(layer.parameters(), lr=1e-3)
layer(torch.ones(2, 64, device=sys.argv[1])).sum().backward()
optimizer.step()
os._exit(0)  # passed; Python's own shutdown (garbage collection over torch's objects) would add a second or two
"""


def _passed_probe_record(device_type):
    """(file, text): the file that says the probe passed with this Python, these versions and this device
    type, and what it says; None without bitsandbytes (then the probe fails, and nothing is remembered)."""
    try:
        bitsandbytes = importlib.metadata.version("bitsandbytes")
    except importlib.metadata.PackageNotFoundError:
        return None
    what = (f"bitsandbytes {bitsandbytes}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
            f"{sys.executable}, {platform.machine()}, device {device_type}\n")
    name = hashlib.sha256(what.encode()).hexdigest()[:16]
    return cache_dir() / "eight-bit-probe" / name, what


def _write_whole(path, text):
    """Write `text` to `path` whole (a rename) or not at all; a cache this user cannot write is left as it is."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text)
        os.replace(partial, path)
    except OSError:
        # on a read-only file system (the grader's and the hub's cache) unlink fails too, even of a
        # file that is not there
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def make_optimizer(name, parameters, learning_rate=5e-4, weight_decay=0.0):
    """A fresh optimizer by name: "adamw", "adafactor" or "adamw_8bit" (bitsandbytes).

    Adafactor gets a fixed learning rate (relative_step=False, scale_parameter=False), as
    `TrainingArguments(optim="adafactor")` gives it, so that the course's schedule drives it.
    """
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=learning_rate, weight_decay=weight_decay)
    if name == "adafactor":
        return Adafactor(parameters, lr=learning_rate, weight_decay=weight_decay,
                         relative_step=False, scale_parameter=False, warmup_init=False)
    if name == "adamw_8bit":
        with quiet():  # its import logs about optional 4-bit CPU kernels we do not use
            import bitsandbytes
        return bitsandbytes.optim.AdamW8bit(parameters, lr=learning_rate, weight_decay=weight_decay)
    raise ValueError(f"make_optimizer(name={name!r}): use one of {OPTIMIZERS}")


def optimizer_state_bytes(optimizer):
    """Bytes of memory the optimizer's state holds (moments, scales, step counters).

    Each piece of memory counts once, however many state entries point to it: bitsandbytes
    gives every parameter's state the same two quantisation maps (qmap1, qmap2).
    """
    storages = {}
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage()
                storages[(value.device, storage.data_ptr())] = storage.nbytes()
    return sum(storages.values())


def count_parameters(parameters):
    """How many numbers the parameters hold."""
    return sum(p.numel() for p in parameters)


def state_bytes_per_parameter(optimizer):
    """Optimizer-state bytes per trained parameter (after at least one step)."""
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    return optimizer_state_bytes(optimizer) / count_parameters(parameters)



def adafactor_state_explained(parameters):
    """One line: the bytes per weight Adafactor keeps for `parameters`, worked out from their shapes.

    transformers' Adafactor (no first moment, its default) keeps, for a tensor of two dimensions or
    more, a mean of the squared gradient per row and per column; for a vector, one per number; and
    for every tensor its RMS (a float32 number). Beside a student's prediction of the measured bytes.
    """
    parameters = list(parameters)
    weights = count_parameters(parameters)
    matrices = [p for p in parameters if p.dim() >= 2]
    state = sum((p.shape[:-1].numel() + (p.shape[:-2] + p.shape[-1:]).numel()) * p.element_size() for p in matrices)
    state += sum(p.numel() * p.element_size() for p in parameters if p.dim() < 2) + 4 * len(parameters)
    matrix_share = count_parameters(matrices) / weights
    return message("From the shapes alone: Adafactor keeps one number per row and one per column of each matrix "
                   "({matrices:.1%} of the weights), one number per weight of the vectors (the other {vectors:.1%}) "
                   "and one per tensor (its RMS): {bytes:.2f} bytes per weight.",
                   matrices=matrix_share, vectors=1 - matrix_share, bytes=state / weights)

@dataclass(frozen=True)
class OptimizerTraining:
    """How `compare_optimizers` trains the model with each optimizer."""
    model_name: str | None = None
    batch_size: int = 16
    epochs: int = 1
    learning_rates: dict | None = None  # {optimizer name: learning rate}; 5e-4 for those left out


def compare_optimizers(tokenized_train, tokenizer, *, names=OPTIMIZERS, device=None, progress=True, **training):
    """Train the same model (same start, same batches) with each optimizer; one row per optimizer.

    training: the keywords of `OptimizerTraining` (model_name, batch_size, epochs, learning_rates).
    The model is `load_model(model_name)`: the offline default for None, else the model whose
    tokenizer made `tokenized_train`.
    All of them train on one device, `device` (default: `default_device()`), so that their seconds
    compare; bitsandbytes' 8-bit AdamW runs on the CPU as well as on a GPU.
    A row holds the device's type ("cuda", "cpu") and plain numbers: state bytes, bytes per
    parameter, seconds, the loss per step. Optimizers that cannot run there (8-bit AdamW without
    its kernels) are left out. With "adamw_8bit" this process imports bitsandbytes, and can no
    longer use helpers.run_on_processes.
    """
    training = OptimizerTraining(**training)
    learning_rates = {"adamw": 5e-4, "adafactor": 5e-4, "adamw_8bit": 5e-4, **(training.learning_rates or {})}
    device = torch.device(device or default_device())
    rows = []
    for name in names:
        if name == "adamw_8bit" and eight_bit_unavailable(device):
            continue
        with quiet():
            torch.manual_seed(0)
            model = load_model(training.model_name)
            loader = make_dataloader(tokenized_train, tokenizer, training.batch_size, shuffle=True)
            optimizer = make_optimizer(name, model.parameters(), learning_rates[name])
        history = train_pytorch(model, loader, epochs=training.epochs, optimizer=optimizer, device=device,
                                progress=progress)
        rows.append({"optimizer": name, "device": device.type, "parameters": count_parameters(model.parameters()),
                     "state_bytes": optimizer_state_bytes(optimizer),
                     "bytes_per_parameter": state_bytes_per_parameter(optimizer),
                     "seconds": history.seconds, "final_loss": sum(history.loss[-5:]) / len(history.loss[-5:]),
                     "loss": history.loss})
    return rows
