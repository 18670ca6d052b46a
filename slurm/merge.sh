#!/bin/bash
# The merge of slurm/grade.sh's shards into one gradebook, once every shard succeeded:
#     sbatch --dependency=afterok:$jobid slurm/merge.sh
#SBATCH --job-name=autograde-merge
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --time=00:30:00
set -euo pipefail
# --kill-on-invalid-dep: a shard that fails or hits its time limit cancels this job, which would
# otherwise stay pending forever (DependencyNeverSatisfied)

SHARDS_DIR=${SHARDS_DIR:-build/shards}  # as in slurm/grade.sh
GRADED=${GRADED:-build/graded}          # the merged gradebook, grades.csv, report and feedback
exec make merge SHARDS="$(ls -d "$SHARDS_DIR"/*)" OUT="$GRADED"
