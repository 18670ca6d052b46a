#!/bin/bash
# Grade a class as a Slurm job array, one shard of the submissions per array task
# (docs/grading.md, "A large class: shards"). From the course folder:
#     jobid=$(sbatch --parsable slurm/grade.sh)
#     sbatch --dependency=afterok:$jobid slurm/merge.sh
# A shard stopped by its time limit: sbatch --array=K slurm/grade.sh grades what it has left;
# then submit the merge again with that job's id.
#SBATCH --job-name=autograde
#SBATCH --array=1-20
#SBATCH --cpus-per-task=4
#SBATCH --mem=32G
#SBATCH --time=04:00:00
set -euo pipefail

# The number of shards: the size of the whole --array above. Written here, since Slurm's
# SLURM_ARRAY_TASK_COUNT is the size of what was submitted (1 for sbatch --array=3 slurm/grade.sh).
N=${SHARD_COUNT:-20}
SUBMISSIONS=${SUBMISSIONS:-class.zip}   # the LMS zip or submitted folder, relative to the course folder
SHARDS_DIR=${SHARDS_DIR:-build/shards}  # shard K grades into SHARDS_DIR/K

if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
    echo "slurm/grade.sh: run it as a job array: sbatch slurm/grade.sh" >&2; exit 2
fi
if [ "$SLURM_ARRAY_TASK_MAX" -gt "$N" ]; then
    echo "slurm/grade.sh: --array goes to $SLURM_ARRAY_TASK_MAX, but N=$N shards: make them agree" >&2; exit 2
fi
# exec: make becomes the job's process. At the time limit Slurm sends SIGTERM to that process
# only, then SIGKILL to all the job's processes; a shell in between would die of the SIGTERM and
# leave the grader to the SIGKILL (no report, temporary folders left). make passes the SIGTERM on.
exec make autograde SUBMISSIONS="$SUBMISSIONS" OUT="$SHARDS_DIR/$SLURM_ARRAY_TASK_ID" \
    JOBS="$SLURM_CPUS_PER_TASK" SHARD="$SLURM_ARRAY_TASK_ID/$N"
