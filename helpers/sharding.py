"""Sharded data parallelism: ZeRO's stages, and torch's FSDP2 (`fully_shard`) on CPU processes.

Data-parallel training (lesson 2, DDP) keeps a whole copy of the parameters, the gradients and
the optimizer's state in every process. ZeRO (DeepSpeed) splits them over the P processes in
stages: stage 1 the optimizer state, stage 2 the gradients too, stage 3 the parameters too.
torch's FSDP2, `torch.distributed.fsdp.fully_shard`, shards all three: each parameter becomes a
DTensor split along its first dimension (placement `Shard(0)`), and each process keeps its own
piece (`to_local()`), the gradient of that piece and AdamW's moments of that piece. Before a
module's forward (and again before its backward, except the root's, which stay gathered) its
parameters are all-gathered; after its backward the gradients are reduce-scattered (`_fsdp_collectives.py`: `all_gather_single`,
`reduce_scatter_single`).

`measure_sharding` trains the course's model both ways on the same batches and counts what each
process holds and what the processes exchange. It imports torch._dynamo first: fully_shard imports
it on first use (about 4 s), and imported here, before run_on_processes forks, it is imported once.
"""
import contextlib
import time
from dataclasses import dataclass
from unittest import mock

import torch
import torch._dynamo  # noqa: F401 (see the docstring: imported once, before the processes fork)
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

from .checks import require_positive_int
from .data import make_dataloader
from .fsdp_step import StepLog
from .modeling import load_model
from .quiet import quiet

PARTS = ("parameters", "gradients", "optimizer_state")
# what each ZeRO stage shards; stage 0 is plain data parallelism (DDP)
ZERO_STAGES = {0: (), 1: ("optimizer_state",), 2: ("optimizer_state", "gradients"), 3: PARTS}
MODES = ("data parallel", "fully sharded")


def zero_bytes_per_process(num_parameters, num_processes, stage, bytes_per_number=4, state_numbers=2):
    """{part: bytes one process keeps} for ZeRO `stage` (0-3): float32 numbers and AdamW's two moments
    by default (AdamW's step counters, 4 bytes per tensor, left out). A sharded part is split evenly
    over the processes (`num_parameters` a multiple of `num_processes`, as ZeRO pads it)."""
    require_positive_int("num_processes", num_processes)
    if stage not in ZERO_STAGES:
        raise ValueError(f"stage must be one of {sorted(ZERO_STAGES)}, got {stage!r}")
    whole = {"parameters": num_parameters * bytes_per_number, "gradients": num_parameters * bytes_per_number,
             "optimizer_state": num_parameters * bytes_per_number * state_numbers}
    return {part: size // num_processes if part in ZERO_STAGES[stage] else size for part, size in whole.items()}


def local_bytes(tensors):
    """Bytes this process holds of `tensors`: a DTensor its local shard (`to_local()`; its numel() is the
    whole tensor's), a plain tensor all of it, None (a parameter without a gradient) nothing."""
    total = 0
    for tensor in tensors:
        if tensor is None:
            continue
        if isinstance(tensor, DTensor):
            tensor = tensor.to_local()
        total += tensor.numel() * tensor.element_size()
    return total


def state_tensors(optimizer):
    """Every tensor in the optimizer's state (AdamW: exp_avg, exp_avg_sq and step, per parameter)."""
    return [value for state in optimizer.state.values() for value in state.values() if isinstance(value, torch.Tensor)]


def layer_classes(model):
    """The class names of `model`'s layers, each to be sharded on its own: those its `_no_split_modules` names
    (BERT: BertEmbeddings and BertLayer); for a model that names none (DistilBERT, transformers 5.23), the
    classes in its `nn.ModuleList`s (the transformer blocks: TransformerBlock) and the module that holds its
    input embeddings (Embeddings)."""
    named = set(getattr(model, "_no_split_modules", None) or ())
    if named:
        return named
    classes = {type(layer).__name__ for module in model.modules() if isinstance(module, torch.nn.ModuleList)
               for layer in module}
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    for module in list(model.modules())[1:]:
        if embeddings is not None and any(child is embeddings for child in module.children()):
            classes.add(type(module).__name__)
    return classes


def shard_model(model):
    """fully_shard each layer of `model` (`layer_classes`), then the whole model, bottom-up as fully_shard asks.
    Each layer's parameters are all-gathered twice per step (before its forward and again before its
    backward), the rest, which the root keeps, once; each group's gradients are reduce-scattered once."""
    classes = layer_classes(model)
    for module in list(model.modules())[1:]:
        if type(module).__name__ in classes:
            fully_shard(module)
    fully_shard(model)
    return model


class Collectives:
    """Counts the collectives of one process and the bytes of the whole tensors they work on."""

    def __init__(self):
        self.calls = {"all-reduce": 0, "all-gather": 0, "reduce-scatter": 0}
        self.bytes = dict.fromkeys(self.calls, 0)

    def add(self, kind, tensor):
        self.calls[kind] += 1
        self.bytes[kind] += tensor.numel() * tensor.element_size()

    def counting_fsdp(self):
        """A block in which FSDP2's all-gathers (their output) and reduce-scatters (their input) are counted."""
        all_gather, reduce_scatter = dist.all_gather_single, dist.reduce_scatter_single

        def counted_all_gather(output_tensor, input_tensor, *args, **kwargs):
            self.add("all-gather", output_tensor)
            return all_gather(output_tensor, input_tensor, *args, **kwargs)

        def counted_reduce_scatter(output, input, *args, **kwargs):  # noqa: A002 (torch's names)
            self.add("reduce-scatter", input)
            return reduce_scatter(output, input, *args, **kwargs)

        return mock.patch.multiple(dist, all_gather_single=counted_all_gather,
                                   reduce_scatter_single=counted_reduce_scatter)

    def count_ddp(self, model):
        """Count DDP's gradient all-reduces (one per bucket) through a communication hook."""
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        def counting_hook(state, bucket):
            self.add("all-reduce", bucket.buffer())
            return default_hooks.allreduce_hook(state, bucket)

        model.register_comm_hook(None, counting_hook)


@dataclass(frozen=True)
class ShardingTraining:
    """How `measure_sharding` trains both ways, on every process."""
    model_name: str | None = None
    batch_size: int = 4            # per process
    steps: int = 6                 # optimizer steps
    learning_rate: float = 5e-4
    optimizer: str = "adamw"       # or "sgd"

    def __post_init__(self):
        require_positive_int("steps", self.steps)
        require_positive_int("batch_size", self.batch_size)
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', got {self.optimizer!r}")


def _train_one_way(mode, tokenized_train, tokenizer, training, count_bytes):
    """In each process: train `mode` for `training.steps` optimizer steps; this process's bytes, losses,
    collectives."""
    rank, processes = dist.get_rank(), dist.get_world_size()
    with quiet():
        model = load_model(training.model_name, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        # the same global batches for both ways; each process takes every P-th example of each
        loader = make_dataloader(tokenized_train, tokenizer, training.batch_size * processes)
    num_parameters = sum(p.numel() for p in model.parameters())
    collectives, step_log = Collectives(), StepLog()
    if mode == "data parallel":
        model = torch.nn.parallel.DistributedDataParallel(model)
        collectives.count_ddp(model)
        counting = contextlib.nullcontext()  # the hook counts
    else:
        model = shard_model(model)
        counting = contextlib.ExitStack()
        counting.enter_context(collectives.counting_fsdp())
        counting.enter_context(step_log.recording())  # the order of the last step's events
    lr = training.learning_rate
    optimizer = (torch.optim.SGD(model.parameters(), lr=lr) if training.optimizer == "sgd"
                 else torch.optim.AdamW(model.parameters(), lr=lr))
    losses, held, calls_by_step = [], {}, []
    start = time.perf_counter()
    with counting:
        for step, batch in zip(range(training.steps), loader):
            calls_before = dict(collectives.calls)
            step_log.start_step()
            batch = {key: value[rank::processes] for key, value in batch.items()}
            loss = model(**batch).loss
            loss.backward()
            held["gradients"] = count_bytes(p.grad for p in model.parameters())
            optimizer.step()
            optimizer.zero_grad()
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)  # the mean over the processes: the loss of the whole batch
            losses.append(mean_loss.item() / processes)
            calls_by_step.append({kind: calls - calls_before[kind] for kind, calls in collectives.calls.items()})
    seconds = time.perf_counter() - start
    held["parameters"] = count_bytes(model.parameters())
    held["optimizer_state"] = count_bytes(state_tensors(optimizer))
    every = [None] * processes
    dist.all_gather_object(every, held)
    steps_done = len(losses)
    return {"mode": mode, "num_parameters": num_parameters, "processes": processes,
            "bytes": {part: [held_by[part] for held_by in every] for part in PARTS},
            "loss": losses, "seconds": seconds, "optimizer_steps": steps_done,
            "calls_per_step": {kind: calls / steps_done for kind, calls in collectives.calls.items()},
            "calls_by_step": calls_by_step, "step_events": step_log.events,
            "sharded_modules": [name for name, module in model.named_modules() if isinstance(module, FSDPModule)],
            "bytes_per_step": {kind: size / steps_done for kind, size in collectives.bytes.items()}}


def accelerate_with_fsdp_plugin_on_cpu():
    """In each process: what Accelerator(cpu=True, fsdp_plugin=...fsdp_version=2) makes of a model."""
    from accelerate import Accelerator
    from accelerate.utils import FullyShardedDataParallelPlugin
    accelerator = Accelerator(cpu=True, fsdp_plugin=FullyShardedDataParallelPlugin(fsdp_version=2))
    prepared = accelerator.prepare(torch.nn.Linear(4, 4))
    return {"distributed_type": str(accelerator.distributed_type.value), "model": type(prepared).__name__}


def _measure_in_process(tokenized_train, tokenizer, training, count_bytes):
    accelerate_seen = accelerate_with_fsdp_plugin_on_cpu()  # also starts the process group (gloo)
    rows = [_train_one_way(mode, tokenized_train, tokenizer, training, count_bytes) for mode in MODES]
    return {"rows": rows, "accelerate": accelerate_seen}


def measure_sharding(tokenized_train, tokenizer, *, count_bytes=local_bytes, num_processes=2, **training):
    """Train the model data parallel (DDP) and fully sharded (FSDP2) on `num_processes` CPU processes.

    training: the keywords of `ShardingTraining` (model_name, batch_size per process, steps,
    learning_rate, optimizer "adamw" or "sgd"). Both ways start from the same weights (dropout off)
    and see the same batches, with AdamW (optimizer="sgd": plain SGD, whose step grows with the
    gradient, where Adam's hardly does: a test of the gradients' scale). `count_bytes(tensors)`
    counts a process's bytes (default: `local_bytes`).
    Returns {"rows": one per mode, "accelerate": what Accelerate made of an FSDP plugin on the CPU}.
    A row holds the bytes of each part per process (after the last step), the mean loss of each
    step, the seconds, and the collectives per step with the bytes of the tensors they work on.
    """
    from .distributed import run_on_processes
    training = ShardingTraining(**training)
    return run_on_processes(_measure_in_process, tokenized_train, tokenizer, training, count_bytes,
                            num_processes=num_processes, timeout_s=None)


def loss_difference(rows):
    """The largest difference between the two modes' losses, step by step."""
    by_mode = {row["mode"]: row["loss"] for row in rows}
    return max(abs(a - b) for a, b in zip(by_mode[MODES[0]], by_mode[MODES[1]]))


def _tiny_in_process(count_bytes):
    """In each process: a small two-layer model, fully sharded, one AdamW step; what `count_bytes` and
    `local_bytes` count of its parameters, gradients and optimizer state."""
    from accelerate import PartialState
    PartialState(cpu=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))  # 3 rows: uneven
    whole = sum(p.numel() * p.element_size() for p in model.parameters())
    fully_shard(model[0])
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 8)).sum().backward()
    parts = {"parameters": list(model.parameters()), "gradients": [p.grad for p in model.parameters()]}
    optimizer.step()
    parts["optimizer_state"] = state_tensors(optimizer)
    counts = {part: {"yours": count_bytes(iter(tensors)), "yours_from_a_list": count_bytes(list(tensors)),
                     "reference": local_bytes(tensors)} for part, tensors in parts.items()}
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, counts)
    return {"whole_parameters": whole, "processes": every}


def count_on_sharded_model(count_bytes, num_processes=2):
    """Run `count_bytes` on a small fully sharded model in `num_processes` processes (a lesson's test):
    {"whole_parameters": bytes of the unsharded parameters, "processes": per process, per part,
    {"yours": count_bytes's bytes of a generator, "yours_from_a_list": of a list, "reference": local_bytes's}}."""
    from .distributed import run_on_processes
    return run_on_processes(_tiny_in_process, count_bytes, num_processes=num_processes)
