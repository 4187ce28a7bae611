#!/bin/bash
# How the GPU results in bench/RESULTS.md ("GPU") and the GPU test runs were
# produced: one call on a machine with an NVIDIA GPU, from the repository
# root, writing logs under $OUT (default ./gpu-out).
#
#   1. the environment (GPU, driver, toolkit, compilers);
#   2. the GPU test binaries and the benchmark, prebuilt elsewhere and carried
#      in .gpu-prebuilt/, if they run here: the tests, then the benchmark's
#      one run (so the figures are in hand early);
#   3. a build from source here — GoogleTest from .deps/googletest, RapidCheck
#      from .deps/rapidcheck (the device image has neither) — and
#      `ctest -L gpu`, the registered GPU tests, each in its own process
#      (and the benchmark from this build if 2 could not run it);
#   4. compute-sanitizer memcheck over the test binaries (ctest -L memcheck).
# Each step is time-boxed against one deadline (DEADLINE seconds, default
# 570) so the call ends inside its limit; a failing step does not stop the
# later ones.
set -u
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
root="$PWD"
jobs="$(nproc)"
summary="$OUT/summary.txt"
deadline=$((SECONDS + ${DEADLINE:-570}))
# left N: at most N seconds, and never past the deadline.
left() { local rest=$((deadline - SECONDS)); [ "$rest" -lt "$1" ] && echo $((rest > 5 ? rest : 5)) || echo "$1"; }
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvidia-smi -L
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  command -v ninja compute-sanitizer cuobjdump
  uname -r
} >"$OUT/env.txt" 2>&1
note "env: $(grep -m1 -i nvidia "$OUT/env.txt")"

# ---- 2. prebuilt binaries
bench_binary=""
if [ -x .gpu-prebuilt/cuda_storage_test ] && .gpu-prebuilt/cuda_storage_test --gtest_list_tests >/dev/null 2>&1; then
  : >"$OUT/prebuilt.log"
  for t in cuda_storage_test cuda_device_test cuda_checked_test cuda_poison_test; do
    timeout "$(left 120)" .gpu-prebuilt/$t --gtest_brief=1 >>"$OUT/prebuilt.log" 2>&1
    note "prebuilt $t: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/prebuilt.log" | tail -3 | tr '\n' ' ')"
  done
  cuobjdump --list-elf --list-ptx .gpu-prebuilt/cuda_device_test >>"$OUT/env.txt" 2>&1
  timeout "$(left 200)" .gpu-prebuilt/taintpool_gpu_bench --out "$OUT/bench.md" >"$OUT/bench.log" 2>&1
  note "bench (prebuilt): rc=$?"
  [ -s "$OUT/bench.md" ] && bench_binary=done
else
  note "prebuilt binaries absent or not runnable here"
fi

# ---- 3. build here, ctest -L gpu
build_ok=0
(
  set -e
  cmake -S .deps/googletest -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/tmp/deps >/dev/null
  cmake --build /tmp/gtest-build -j"$jobs" --target install >/dev/null
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON \
    -DTAINTPOOL_BUILD_TESTS=ON -DTAINTPOOL_BUILD_BENCHMARKS=OFF -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON \
    -DTAINTPOOL_BUILD_EXAMPLES=OFF -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF \
    -DCMAKE_PREFIX_PATH=/tmp/deps \
    -Drapidcheck_DIR="$root/.deps/rapidcheck/usr/lib/x86_64-linux-gnu/cmake/rapidcheck"
  timeout "$(left 300)" cmake --build build-gpu -j"$jobs" --target cuda_storage_test cuda_device_test \
    cuda_checked_test cuda_poison_test taintpool_gpu_bench
) >"$OUT/build.log" 2>&1 && build_ok=1
note "build here: ok=$build_ok ($(tail -1 "$OUT/build.log"))"
if [ "$build_ok" = 1 ]; then
  timeout "$(left 200)" ctest --test-dir build-gpu -L gpu -LE memcheck -E gpu_bench_smoke -j4 \
    --output-on-failure >"$OUT/ctest.log" 2>&1
  note "ctest -L gpu: rc=$? $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
  grep -E "Failed|\*\*\*Skipped|Not Run" "$OUT/ctest.log" | head -20 | tee -a "$summary"
  if [ -z "$bench_binary" ]; then
    timeout "$(left 200)" build-gpu/bench/gpu/taintpool_gpu_bench --out "$OUT/bench.md" \
      >"$OUT/bench.log" 2>&1
    note "bench (built here): rc=$?"
  elif [ "${BENCH_TWICE:-1}" = 1 ] && [ "$(left 400)" -ge 300 ]; then
    # A second run of the same code, built here: the run-to-run spread.
    echo "==== second run (built here) ====" >>"$OUT/bench.log"
    timeout "$(left 200)" build-gpu/bench/gpu/taintpool_gpu_bench >>"$OUT/bench.log" 2>&1
    note "bench, second run (built here): rc=$?"
  fi
fi

# ---- 4. compute-sanitizer memcheck
if [ "$build_ok" = 1 ]; then
  timeout "$(left 300)" ctest --test-dir build-gpu -L memcheck -j3 --output-on-failure >"$OUT/memcheck.log" 2>&1
  note "memcheck: rc=$? $(grep -E 'tests passed|tests failed' "$OUT/memcheck.log")"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|Passed|Failed|Skipped" "$OUT/memcheck.log" | tee -a "$summary"
fi
cat "$OUT/bench.md" 2>/dev/null
cat "$summary"
