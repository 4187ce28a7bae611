#!/bin/bash
# bench/gpu/run_collectives.sh — everything GPU of the collectives (issue 16)
# in one command, from the repository root, on a machine with NVIDIA GPUs
# (two or more for the cross-rank checks; one runs the rest) and NCCL:
#
#   OUT=/some/dir bench/gpu/run_collectives.sh        # default OUT=./collectives-out
#
#   1. the environment                                   -> $OUT/env.txt
#   2. a Release build here: CUDA backend, NCCL from the pip-installed
#      PyTorch's nvidia.nccl package (or TAINTPOOL_NCCL_ROOT), MPI if found;
#      only the NCCL test and benchmark and their libraries (the GPU image
#      has no GoogleTest)                                -> $OUT/build.log
#   3. nccl_collectives_test: C1-C6 on every GPU, one process each
#                                                        -> $OUT/nccl_test.log
#   4. nccl_collectives_bench: taintpool's collectives against plain NCCL,
#      64 KiB and 64 MiB, every operation                -> $OUT/bench.log, bench.md
#   5. the summary, printed last                         -> $OUT/summary.txt
# Every step is time-boxed against one deadline (DEADLINE seconds, default
# 480), so the whole call ends well inside ten minutes; a failing step does
# not stop the later ones. NCCL_NVLS_ENABLE stays 0 unless set otherwise.
set -u
OUT="${OUT:-$PWD/collectives-out}"
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
deadline=$((SECONDS + ${DEADLINE:-480}))
left() { local rest=$((deadline - SECONDS)); [ "$rest" -lt "$1" ] && echo $((rest > 5 ? rest : 5)) || echo "$1"; }
summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# ---- 1. environment
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  command -v mpirun ninja
  echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
} >"$OUT/env.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
note "env: $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

# ---- 2. build
nccl_root="${TAINTPOOL_NCCL_ROOT:-}"
if [ -z "$nccl_root" ]; then
  for py in "${TAINTPOOL_NCCL_PYTHON:-}" /opt/torch/.venv/bin/python3 python3; do
    [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
    nccl_root=$("$py" -c 'import nvidia.nccl,os;print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null ||
      "$py" -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null) && break
  done
fi
note "nccl root: ${nccl_root:-not found} ($(ls "$nccl_root"/include/nccl.h "$nccl_root"/lib/libnccl.so* 2>/dev/null | tr '\n' ' '))"
build=build/gpu-collectives
build_ok=0
(
  set -e
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON -DTAINTPOOL_NCCL=ON \
    -DTAINTPOOL_NCCL_ROOT="$nccl_root" -DTAINTPOOL_MPI=AUTO -DTAINTPOOL_BUILD_TESTS=OFF \
    -DTAINTPOOL_BUILD_BENCHMARKS=OFF -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON \
    -DTAINTPOOL_BUILD_EXAMPLES=OFF -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF
  targets=(nccl_collectives_test nccl_collectives_bench)
  grep -q '^TAINTPOOL_MPI_ENABLED\|taintpool_mpi' "$build/build.ninja" 2>/dev/null && targets+=(taintpool_mpi)
  timeout "$(left 300)" cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
) >"$OUT/build.log" 2>&1 && build_ok=1
note "build: ok=$build_ok ($(grep -E 'NCCL communicator|MPI communicator' "$OUT/build.log" | sed 's/-- taintpool: //' | tr '\n' ';'))"

# ---- 3. tests
test_rc=-
if [ "$build_ok" = 1 ]; then
  timeout "$(left 300)" "$build/tests/nccl/nccl_collectives_test" >"$OUT/nccl_test.log" 2>&1
  test_rc=$?
  note "nccl_collectives_test: rc=$test_rc ($(grep -c ' ok  ' "$OUT/nccl_test.log") checks ok, $(grep -c 'FAIL' "$OUT/nccl_test.log") FAIL lines)"
  grep -E 'FAIL|PASSED|FAILED|timeout|uncaught' "$OUT/nccl_test.log" | head -20 | tee -a "$summary"
fi

# ---- 4. benchmark
if [ "$build_ok" = 1 ]; then
  # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags (e.g. --quick).
  timeout "$(left 400)" "$build/bench/gpu/nccl_collectives_bench" ${BENCH_ARGS:-} --out "$OUT/bench.md" >"$OUT/bench.log" 2>&1
  note "nccl_collectives_bench: rc=$?"
fi

# ---- 5. summary
echo
cat "$OUT/bench.md" 2>/dev/null | tee -a "$summary"
echo
cat "$summary"
