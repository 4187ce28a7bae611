#!/bin/bash
# Records PyTorch allocation traces on the GPU machine and replays them at
# once (issue 12's held-out evidence): each WORKLOAD of
# bench/gpu/record_trace.py runs in its own process, then
# bench/gpu/replay_on_device.sh replays every trace recorded, so the traces
# and the table come back from one call. From the repository root:
#
#   OUT=/some/dir bench/gpu/record_on_device.sh WORKLOAD...
#
# Writes $OUT/traces.tar (WORKLOAD.{trace.gz,meta.json} for each: commit
# them under bench/traces/; one file, as the device machine sends back at
# most eight), $OUT/record.log, and the replay's six files under
# $OUT/replay/. Knobs: RECORD_TIMEOUT (seconds per workload, default 150),
# DEADLINE (seconds for the whole call, default 570; the replay gets what the
# recording left), ALLOCATORS and REPEAT (passed to the replay).
set -u
OUT="${OUT:-$PWD/record-out}"
mkdir -p "$OUT/traces"
start=$SECONDS
python=""
for candidate in python3 /opt/torch/.venv/bin/python3; do
  if "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "no python with torch: nothing recorded"; exit 1; }
for workload in "$@"; do
  echo "==== $workload ====" >>"$OUT/record.log"
  timeout "${RECORD_TIMEOUT:-150}" "$python" bench/gpu/record_trace.py "$workload" "$OUT/traces" \
    >>"$OUT/record.log" 2>&1 || echo "$workload: recording failed (see record.log)"
done
tail -5 "$OUT/record.log"
shopt -s nullglob
recorded=("$OUT"/traces/*.trace.gz)
[ ${#recorded[@]} -gt 0 ] || { echo "no trace recorded"; exit 1; }
scratch=$(mktemp -d)
mv "$OUT"/traces/* "$scratch"/ && rmdir "$OUT/traces"
tar cf "$OUT/traces.tar" -C "$scratch" .
OUT="$OUT/replay" DEADLINE=$((${DEADLINE:-570} - (SECONDS - start))) \
  bash bench/gpu/replay_on_device.sh "$scratch"/*.trace.gz
