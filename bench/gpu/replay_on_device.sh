#!/bin/bash
# Replays real allocation traces on the GPU (issue 12): taintpool against
# c10 (PyTorch's caching allocator, plain and with expandable segments),
# cudaMallocAsync and cudaMalloc, with bench/gpu/trace_replay. One call on a
# machine with an NVIDIA GPU, from the repository root:
#
#   OUT=/some/dir bench/gpu/replay_on_device.sh [TRACE.trace.gz ...]
#
# With no TRACE, every trace under bench/traces/ and traces/ (where the
# shared traces can be copied into the tree for the run). Writes under $OUT
# (default ./replay-out), at most 8 files:
#   env.txt               GPU, driver, toolkit, compilers, torch
#   build.log             the build (cmake + ninja, Release)
#   replay.log            every allocator's line per trace, as it ran
#   replay.md             the table: cold / warm ns per op, peak reserved /
#                         peak in use, device memory calls
#   replay_plots.tar.gz   one SVG per trace, every allocator side by side
#   replay_raw.tar.gz     the per-allocator result and timeline files
#
# Knobs (environment): ALLOCATORS (default: every one the build has),
# REPEAT (warm replays per allocator, default 3), DEADLINE (seconds for the
# whole call, default 570: each replay is time-boxed so the call ends in
# time), TORCH_DIR (torch's package directory; default: what python3, or
# /opt/torch/.venv/bin/python3, imports).
set -u
OUT="${OUT:-$PWD/replay-out}"
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
root="$PWD"
deadline=$((SECONDS + ${DEADLINE:-570}))
left() { local rest=$((deadline - SECONDS)); [ "$rest" -lt "$1" ] && echo $((rest > 5 ? rest : 5)) || echo "$1"; }

traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
  shopt -s nullglob
  traces=(bench/traces/*.trace.gz traces/*.trace.gz)
  shopt -u nullglob
fi

# Torch, for the c10 replay: its package directory (include/ and lib/).
torch_dir="${TORCH_DIR:-}"
if [ -z "$torch_dir" ]; then
  for python in python3 /opt/torch/.venv/bin/python3; do
    torch_dir=$("$python" -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null) && break
    torch_dir=""
  done
fi

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  echo "torch: ${torch_dir:-not found}"
  echo "traces: ${traces[*]}"
} >"$OUT/env.txt" 2>&1

build=build-replay
configure() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON \
    -DTAINTPOOL_BUILD_TESTS=OFF -DTAINTPOOL_BUILD_BENCHMARKS=OFF \
    -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON -DTAINTPOOL_BUILD_EXAMPLES=OFF \
    -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF "$@"
}
{
  configure -DTAINTPOOL_TORCH=AUTO ${torch_dir:+-DTORCH_DIR="$torch_dir"} &&
    timeout "$(left 300)" cmake --build "$build" -j"$(nproc)" --target trace_replay
} >"$OUT/build.log" 2>&1
if [ ! -x "$build/bench/gpu/trace_replay" ]; then
  # torch's headers may not build here: the replay without c10 still runs.
  echo "==== the build with c10 failed; building without it ====" >>"$OUT/build.log"
  { configure -DTAINTPOOL_TORCH=OFF &&
      timeout "$(left 300)" cmake --build "$build" -j"$(nproc)" --target trace_replay; } \
    >>"$OUT/build.log" 2>&1 || { echo "build failed: see build.log"; tail -30 "$OUT/build.log"; exit 1; }
fi

replay="$build/bench/gpu/trace_replay"
available=$("$replay" --list)
allocators="${ALLOCATORS:-taintpool c10 c10-expandable cudaMallocAsync cudaMalloc taintpool-pages}"
raw="$OUT/raw"
mkdir -p "$raw"
: >"$OUT/replay.log"
for allocator in $allocators; do
  name=$allocator
  env_prefix=()
  if [ "$allocator" = c10-expandable ]; then
    name=c10
    env_prefix=(env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
  fi
  case " $available " in *" $name "*) ;; *)
    echo "skipped $allocator: not in this build ($available)" | tee -a "$OUT/replay.log"
    continue ;;
  esac
  for trace in "${traces[@]}"; do
    if [ "$(left 30)" -lt 30 ]; then
      echo "deadline: skipped $allocator on $trace" | tee -a "$OUT/replay.log"
      continue
    fi
    timeout "$(left 240)" "${env_prefix[@]}" "$replay" --allocator "$name" --out "$raw" \
      --repeat "${REPEAT:-3}" "$trace" 2>&1 | tee -a "$OUT/replay.log"
  done
done

"$replay" --report "$raw" --markdown "$OUT/replay.md" >/dev/null 2>>"$OUT/replay.log"
(cd "$raw" && tar czf "$OUT/replay_plots.tar.gz" ./*.svg 2>/dev/null)
(cd "$raw" && tar czf "$OUT/replay_raw.tar.gz" ./*.result ./*.timeline 2>/dev/null)
rm -rf "$raw"
cat "$OUT/replay.md"
