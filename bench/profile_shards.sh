#!/bin/bash
# Profile Mulder et al.'s grid on every core of a many-core machine (one process per core, one thread each, disjoint
# shards), and on its GPU when it has one, for BUDGET seconds; then merge the shards into one store.
#
# Run: bench/profile_shards.sh OUT_DIR [BUDGET_S=330] [SHARDS=nproc-2]
# Writes OUT_DIR/cpu.db.gz (split into 15 MB parts when larger), OUT_DIR/gpu.db.gz, OUT_DIR/logs.txt, OUT_DIR/host.txt.
# Core 0 is left to the system; the GPU's process is pinned to the last core. Stores resume when run again.
set -u
out=$1; budget=${2:-330}; cores=$(nproc); shards=${3:-$((cores - 2))}
export PYTHONPATH=src PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
mkdir -p "$out" /tmp/shards
{ lscpu; echo "nproc: $cores"; nvidia-smi -L 2>/dev/null; "$py" -c 'import torch; print("torch", torch.__version__)'; } \
  > "$out/host.txt" 2>&1
if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  "$py" bench/gpu_smoke.py > /tmp/shards/gpu_smoke.txt 2>&1 && \
    taskset -c $((cores - 1)) timeout $((budget + 70)) "$py" bench/primitive_dataset.py --grid paper --max-gmacs 2 \
      --device cuda --db /tmp/shards/gpu.db --budget-s "$budget" > /tmp/shards/gpu.md 2>&1 &
fi
for i in $(seq 0 $((shards - 1))); do
  taskset -c $((i + 1)) timeout $((budget + 70)) "$py" bench/primitive_dataset.py --grid paper --max-gmacs 2 \
    --shard "$i/$shards" --db "/tmp/shards/s$i.db" --budget-s "$budget" > "/tmp/shards/s$i.md" 2>&1 &
done
wait
"$py" bench/merge_stores.py /tmp/shards/cpu.db /tmp/shards/s*.db > /tmp/shards/merge.txt 2>&1
for f in /tmp/shards/*.txt /tmp/shards/*.md; do echo "== $f"; tail -c 3000 "$f"; done > "$out/logs.txt"
gzip -c /tmp/shards/cpu.db > /tmp/shards/cpu.db.gz
if [ "$(stat -c %s /tmp/shards/cpu.db.gz)" -gt 15000000 ]; then
  split -b 15000000 /tmp/shards/cpu.db.gz "$out/cpu.db.gz.part-"
else
  cp /tmp/shards/cpu.db.gz "$out/"
fi
[ -f /tmp/shards/gpu.db ] && gzip -c /tmp/shards/gpu.db > "$out/gpu.db.gz"
ls -la "$out"
