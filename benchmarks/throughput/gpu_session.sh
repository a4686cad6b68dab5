#!/usr/bin/env bash
# One GPU session, one benchmark at a time (docs/benchmarks.md, "Trips and kernels per
# simulation", "Chess at the design's shape"; docs/learning.md, "td-gpu"):
#
#     bash benchmarks/throughput/gpu_session.sh OUT [OLD_TREE]
#
# 1. the suite's search section (4 games, 512 x 64, tiny networks, the backend's default levels
#    per loop trip, no mctx) on this tree;
# 2. the backgammon `td-gpu` preset for TD_SECONDS (default 200) of wall time (Ctrl-C at the
#    end: the run saves its state), its run directory copied to OUT/td-gpu (its error rate is
#    judged afterwards on a CPU with gnubg: `turbozero error-rate OUT/td-gpu`);
# 3. chess at the design's shape (15 x 192, 800 simulations), CHESS_BATCHES (default 4096);
# 4. if given and time is left, 1 again on OLD_TREE (a copy of an earlier revision's
#    turbozero/, envs/, equity/, benchmarks/): an A/B, each run with its own floor.
set -u
OUT=${1:?usage: gpu_session.sh OUT [OLD_TREE]}
OLD=${2:-}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BASE_PATH=${PYTHONPATH:-}
WORK=$(mktemp -d)
START=$(date +%s)
TD_SECONDS=${TD_SECONDS:-200}
el() { echo $(($(date +%s) - START)); }

suite() {  # suite NAME TREE TIMEOUT: the search section from TREE, its JSON to OUT/NAME.json
  local name=$1 tree=$2 limit=$3
  echo "=== $name ($(el) s in): $tree"
  PYTHONPATH="$BASE_PATH:$tree" timeout "$limit" python3 "$tree/benchmarks/throughput/suite.py" \
    --out "$WORK/$name" --sections search --no-mctx --compile-cache "$WORK/cache-$name"
  echo "=== $name: exit $? after $(el) s"
  cp "$WORK/$name/suite.json" "$OUT/$name.json" 2>/dev/null
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
suite new "$ROOT" 130
echo "=== td-gpu ($(el) s in), ${TD_SECONDS} s"
(cd "$WORK" && PYTHONPATH="$BASE_PATH:$ROOT" timeout -s INT "$TD_SECONDS" python3 -m turbozero.cli \
  train backgammon --preset td-gpu --run-dir "$WORK/td-gpu" --no-progress \
  --set eval_opponents=random --set checkpoint_every=20 --set eval_every=0)
echo "=== td-gpu: exit $? after $(el) s"
sleep 3
cp -r "$WORK/td-gpu" "$OUT/td-gpu" 2>/dev/null
echo "=== chess design ($(el) s in)"
PYTHONPATH="$BASE_PATH:$ROOT" timeout 100 python3 "$HERE/chess_design.py" \
  --out "$OUT/chess_design.json" --batches ${CHESS_BATCHES:-4096} --repeats 1
echo "=== chess design: exit $? after $(el) s"
if [ -n "$OLD" ] && [ "$(el)" -lt "${OLD_BEFORE:-420}" ]; then
  suite old "$OLD" 100
fi
du -sh "$OUT"/* 2>/dev/null
echo "=== done after $(el) s"
rm -rf "$WORK"
