#!/usr/bin/env bash
# qsub_kube.test.sh - qsub.test.sh with the burst job run in the emulated
# cluster (hb-kubemu): the PBS variables the script reads in the launcher
# pod, PBS_JOBID among them, are checked as they are on Slurm.
#
# usage: qsub_kube.test.sh BUILD_DIR SRC_DIR
export HB_SANDBOX_BACKEND=kubernetes
exec bash "$(dirname "$0")/qsub.test.sh" "$@"
