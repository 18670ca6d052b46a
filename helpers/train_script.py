"""The course's training paths as a script, for one process, several GPUs or several machines.

    python -m helpers.train_script --path accelerate --gradient-accumulation-steps 4
    torchrun --nproc_per_node 2 -m helpers.train_script --path accelerate --cpu      # 2 CPU processes (gloo)
    accelerate launch --multi_gpu --num_processes 4 -m helpers.train_script --path accelerate
    torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 --master_addr HOST --master_port 29500 \\
        -m helpers.train_script --path trainer                                       # run on each machine

`--batch-size` is per process: with P processes and N accumulation steps, an optimizer step
learns from P * N * batch-size examples, and gives the same parameters as one process with the
whole batch (tests/test_train_script.py). The process with rank 0 prints and saves. Several
processes on a machine without a GPU train on the CPU, as with --cpu.
"""
import argparse
import os
import tempfile

import torch
from transformers import PrinterCallback, ProgressCallback

from .data import load_data, make_dataloader, tokenize_data
from .modeling import load_model, load_tokenizer
from .quiet import quiet
from .hf_trainer import make_trainer
from .training import evaluate, train_accelerate, train_pytorch

PATHS = ("pytorch", "accelerate", "trainer")


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.train_script", description=__doc__.split("\n")[0])
    parser.add_argument("--path", choices=PATHS, default="accelerate", help="which training loop")
    parser.add_argument("--model", default=None, help="hub id or save_pretrained folder (default: the small offline model)")
    parser.add_argument("--data", default=None, help="glue/mrpc or a save_to_disk folder (default: the offline corpus)")
    parser.add_argument("--train-size", type=int, default=512, help="training pairs of the offline corpus")
    parser.add_argument("--batch-size", type=int, default=16, help="examples per batch, per process")
    parser.add_argument("--gradient-accumulation-steps", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-shuffle", action="store_true", help="keep the data in its order")
    parser.add_argument("--no-dropout", action="store_true", help="switch dropout off (for exact comparisons)")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even when a GPU is there (gloo)")
    parser.add_argument("--save-parameters", default=None, help="file for the trained parameters (torch.save)")
    parser.add_argument("--output-dir", default=None, help="the Trainer's folder (default: a temporary one)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(argv)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if args.path == "pytorch" and world_size > 1:
        raise SystemExit("--path pytorch trains in one process; use --path accelerate or trainer with a launcher")
    if world_size > 1 and not args.cpu and not torch.cuda.is_available():
        # Accelerate and the Trainer go distributed on the CPU only when told to: without --cpu
        # each process would train alone on all the data
        args.cpu = True
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"No GPU: the {world_size} processes train together on the CPU (gloo), as with --cpu")
    torch.manual_seed(args.seed)
    dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0) if args.no_dropout else {}
    with quiet():
        sizes = {"train": args.train_size, "validation": 128, "test": 8}
        tokenizer = load_tokenizer(args.model)
        data = tokenize_data(load_data(args.data, sizes=sizes, seed=args.seed), tokenizer)
        model = load_model(args.model, **dropout)
    is_main = int(os.environ.get("RANK", "0")) == 0
    if args.path == "trainer":
        model = _train_with_trainer(model, tokenizer, data, args)
    else:
        loader = make_dataloader(data["train"], tokenizer, args.batch_size, shuffle=not args.no_shuffle,
                                 seed=args.seed)
        options = dict(epochs=args.epochs, learning_rate=args.learning_rate,
                       gradient_accumulation_steps=args.gradient_accumulation_steps, progress=is_main)
        if args.path == "pytorch":
            history = train_pytorch(model, loader, device="cpu" if args.cpu else None, **options)
        else:
            history, accelerator = train_accelerate(model, loader, cpu=args.cpu, **options)
            model = accelerator.unwrap_model(model)
        if is_main:
            print(f"{history.optimizer_steps} optimizer steps in {history.seconds:.1f} s, "
                  f"last loss {history.loss[-1]:.4f}")
    if is_main:
        metrics = evaluate(model, make_dataloader(data["validation"], tokenizer, 64))
        print("validation: " + ", ".join(f"{key} {value:.3f}" for key, value in metrics.items()))
        if args.save_parameters:
            torch.save({name: p.detach().cpu() for name, p in model.named_parameters()}, args.save_parameters)


def _train_with_trainer(model, tokenizer, data, args):
    output_dir = args.output_dir or tempfile.mkdtemp(prefix="helpers-train-")
    trainer = make_trainer(model, tokenizer, data, output_dir=output_dir, epochs=args.epochs,
                           batch_size=args.batch_size, learning_rate=args.learning_rate,
                           gradient_accumulation_steps=args.gradient_accumulation_steps,
                           use_cpu=args.cpu, seed=args.seed, eval_strategy="no", logging_strategy="no")
    trainer.remove_callback(PrinterCallback)
    if int(os.environ.get("RANK", "0")):  # one progress bar, from rank 0
        trainer.remove_callback(ProgressCallback)
    result = trainer.train()
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"{result.global_step} optimizer steps in {result.metrics['train_runtime']:.1f} s, "
              f"train loss {result.training_loss:.4f}")
    return trainer.model


if __name__ == "__main__":
    main()
