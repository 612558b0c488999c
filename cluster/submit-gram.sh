#!/usr/bin/env bash
# Compute an RBF Gram matrix on a running TLS scheduler.
#
#   usage: submit-gram.sh SCHEDULER_ADDRESS INPUT OUT [extra dkernel gram options]
#   e.g.:  submit-gram.sh tls://10.0.0.1:8786 /shared/data/X.npy /shared/gram/K.zarr --gamma 0.5
#
# INPUT and OUT must be on a filesystem that every worker mounts at the same path.
# Re-running the same command resumes an interrupted computation.
set -euo pipefail

if [ "$#" -lt 3 ]; then
    sed -n '2,9p' "$0"
    exit 2
fi
address=$1 input=$2 out=$3
shift 3

export DASK_CONFIG="${DASK_CONFIG:-$(cd "$(dirname "$0")" && pwd)}"

dkernel gram --input "$input" --kernel rbf --out "$out" --cluster "$address" "$@"
dkernel info "$out"
