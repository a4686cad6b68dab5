#!/usr/bin/env bash
# Issue 46 on one GPU, one benchmark at a time (docs/benchmarks.md, "Trips and kernels per
# simulation" and "Chess at the design's shape"):
#
#     bash benchmarks/throughput/gpu_floor.sh OUT [--quick]
#
# 1. the suite's search and mcgs sections with one level per loop trip (today's kernel loops;
#    mctx beside them), cold compiles;
# 2. the same with 4 levels per trip (the kernel and its floor only; compiles cached from 1);
# 3. the same with one level per trip and XLA's command buffers holding the while loops
#    (WHILE, CONDITIONAL: the loops' predicates stay on the GPU, no host round trip);
# 4. chess self-play at the design's shape (15 x 192 network, 800 simulations);
# 5. if time is left, 2 and 8 levels per trip.
# Writes OUT/<run>.json (the suite's JSON) and OUT/chess_design.json; the log is stdout.
# `--quick` runs the CPU sizes (a check of the script itself, not a measurement).
set -u
OUT=${1:?usage: gpu_floor.sh OUT [--quick]}
QUICK=${2:-}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
CACHE="$WORK/cache"
START=$(date +%s)
COMMAND_BUFFERS="--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,DYNAMIC_SLICE_FUSION,WHILE,CONDITIONAL"

suite() {  # suite NAME TIMEOUT ARGS...: one suite run, its JSON copied to OUT/NAME.json
  local name=$1 limit=$2
  shift 2
  echo "=== $name ($(($(date +%s) - START)) s in): suite $*"
  timeout "$limit" python3 "$HERE/suite.py" --out "$WORK/$name" --sections search mcgs \
    $QUICK "$@"
  echo "=== $name: exit $? after $(($(date +%s) - START)) s"
  cp "$WORK/$name/suite.json" "$OUT/$name.json" 2>/dev/null
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
suite unroll1 200 --walk-unroll 1 --compile-cache "$CACHE"
suite unroll4 110 --walk-unroll 4 --no-mctx --compile-cache "$CACHE"
XLA_FLAGS="${XLA_FLAGS:-} $COMMAND_BUFFERS" suite cmdbuf1 130 --walk-unroll 1 --no-mctx \
  --compile-cache "$CACHE"
echo "=== chess design ($(($(date +%s) - START)) s in)"
if [ -n "$QUICK" ]; then
  timeout 120 python3 "$HERE/chess_design.py" --out "$OUT/chess_design.json" --batches 2 \
    --simulations 4 --repeats 1
else
  timeout 120 python3 "$HERE/chess_design.py" --out "$OUT/chess_design.json" --batches 1024
fi
echo "=== chess design: exit $? after $(($(date +%s) - START)) s"
if [ $(($(date +%s) - START)) -lt 400 ]; then
  suite unroll2 90 --walk-unroll 2 --no-mctx --compile-cache "$CACHE"
fi
if [ $(($(date +%s) - START)) -lt 460 ]; then
  suite unroll8 90 --walk-unroll 8 --no-mctx --compile-cache "$CACHE"
fi
echo "=== done after $(($(date +%s) - START)) s"
rm -rf "$WORK"
