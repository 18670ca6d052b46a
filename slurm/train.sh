#!/bin/bash
# Data-parallel training on several nodes (docs/developing.md, "Training on several GPUs or
# machines"): one torchrun per Slurm task, each starting PROCESSES_PER_TASK training processes.
# On GPU nodes: request them (for example #SBATCH --gpus-per-node=8) and set PROCESSES_PER_TASK=8.
# From the course folder, with helpers.train_script's options:
#     sbatch slurm/train.sh --path trainer
#SBATCH --job-name=train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
set -euo pipefail

PROCESSES_PER_TASK=${PROCESSES_PER_TASK:-1}  # one per GPU of a node; 1 on CPU nodes
# The first node of the job hosts the rendezvous
MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
MASTER_PORT=${MASTER_PORT:-29500}
export MASTER_ADDR MASTER_PORT PROCESSES_PER_TASK
# Each task's rank is its torchrun node rank: with one task per node that is the node's number
srun bash -c 'exec .venv/bin/torchrun --nnodes "$SLURM_NTASKS" --node_rank "$SLURM_PROCID" \
    --nproc_per_node "$PROCESSES_PER_TASK" --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" \
    -m helpers.train_script "$@"' train "$@"
