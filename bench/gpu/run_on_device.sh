#!/bin/bash
# Everything GPU in one call on a machine with an NVIDIA GPU, from the
# repository root: build, GPU tests, compute-sanitizer, benchmarks — and a
# short summary table printed last. Full logs go under $OUT (default
# ./gpu-out), at most 8 files:
#
#   env.txt          GPU, driver, toolkit, compilers, torch
#   build.log        GoogleTest (if built here), configure, build
#   ctest.log        ctest -L gpu (the GPU tests, each in its own process)
#   sanitizer.log    compute-sanitizer memcheck and racecheck over every GPU
#                    test binary but the poison one, and the NVTX-region
#                    expectations (sanitizer_probe under initcheck and
#                    memcheck, with and without regions) (ctest -L sanitizer)
#   stream_bench.md  taintpool_stream_bench: scope cost with and without a
#                    cross-stream binding, thread scaling, the two-stream
#                    pipeline against cudaMallocAsync and c10
#   gpu_bench.md     taintpool_gpu_bench (pool pairs, random workload, the
#                    one-stream scope), if time is left
#   bench.log        the benchmarks' progress and errors
#   summary.txt      the table printed last
#
# Stages: 1. environment; 2. GoogleTest — the system's, else built from
# .deps/googletest (bench/gpu/prepare_device.sh puts it there; carry .deps);
# 3. configure and build (Release, CUDA on, TAINTPOOL_TORCH=AUTO: the c10
# baseline builds where python3 imports torch; the GPU tests only, so no
# RapidCheck is needed); 4. the stream benchmark, on a quiet GPU; 5. ctest
# -L gpu and compute-sanitizer memcheck + racecheck (ctest -L sanitizer),
# side by side; 6. the pool's GPU benchmark, if time is left.
# Each stage is time-boxed against one deadline (DEADLINE seconds from the
# start, default 450, so the call ends well inside a 10-minute limit); a
# stage that fails or runs out of time is reported and the later ones still
# run. If no GoogleTest can be had, prebuilt test binaries in .gpu-prebuilt/
# (prepare_device.sh --prebuilt) are run instead.
#
# The device call (bench/gpu/README.md):
#   bench/gpu/prepare_device.sh                                   (here, once)
#   run(command="bash bench/gpu/run_on_device.sh", carry=[".deps"])
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=/usr/local/cuda/bin:$PATH
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
root="$PWD"
jobs="$(nproc)"
deadline=$((SECONDS + ${DEADLINE:-450}))
summary="$OUT/summary.txt"
build="$root/build-gpu"
: >"$summary"
: >"$OUT/bench.log"
rows=()
# left N: at most N seconds, never past the deadline (at least 5).
left() {
  local rest=$((deadline - SECONDS))
  if [ "$rest" -lt "$1" ]; then echo $((rest > 5 ? rest : 5)); else echo "$1"; fi
}
# row STAGE RESULT DETAIL: one line of the summary table.
row() { rows+=("| $1 | $2 | $3 |"); echo "[$(date -u +%T)] $1: $2 $3"; }
verdict() { # rc -> ok / FAILED (rc) / TIMED OUT
  case "$1" in 0) echo ok ;; 124 | 137) echo "TIMED OUT" ;; *) echo "FAILED (rc $1)" ;; esac
}

# ---- 1. environment
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvidia-smi -L
  nvcc --version | tail -2
  cmake --version | head -1
  g++ --version | head -1
  ninja --version
  command -v compute-sanitizer python3
  compute-sanitizer --version | tail -1
  python3 -c 'import torch, os; print("torch", torch.__version__, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI, os.path.dirname(torch.__file__))'
  nproc
  uname -r
} >"$OUT/env.txt" 2>&1
row environment "$(grep -m1 -o 'NVIDIA [A-Z0-9 ]*' "$OUT/env.txt" || echo 'no GPU?')" \
  "$(grep -m1 -o 'release [0-9.]*' "$OUT/env.txt"), $(grep -m1 '^cmake version' "$OUT/env.txt"), $(grep -m1 -o 'torch [^ ]*' "$OUT/env.txt" || echo 'no torch')"

# ---- 2. GoogleTest
gtest_args=()
have_gtest=0
if [ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ] || [ -f /usr/lib/cmake/GTest/GTestConfig.cmake ]; then
  have_gtest=1
  row googletest ok "the system's"
elif [ -f .deps/googletest/CMakeLists.txt ]; then
  if timeout "$(left 150)" bash -c "
      cmake -S .deps/googletest -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DBUILD_GMOCK=OFF &&
      cmake --build /tmp/gtest-build -j$jobs --target install" >>"$OUT/build.log" 2>&1; then
    have_gtest=1
    gtest_args=(-DCMAKE_PREFIX_PATH=/tmp/gtest)
    row googletest ok "built from .deps/googletest"
  else
    row googletest FAILED "building .deps/googletest (build.log)"
  fi
else
  row googletest missing "no system GoogleTest and no .deps/googletest (bench/gpu/prepare_device.sh): GPU tests only from .gpu-prebuilt"
fi

# ---- 3. configure and build
test_flags=(-DTAINTPOOL_BUILD_TESTS=OFF)
if [ "$have_gtest" = 1 ]; then
  test_flags=(-DTAINTPOOL_BUILD_TESTS=ON -DTAINTPOOL_GPU_TESTS_ONLY=ON)
fi
test_targets="cuda_storage_test cuda_device_test cuda_checked_test cuda_poison_test cuda_streams_test cuda_never_written_test cuda_nvtx_rules_test sanitizer_probe"
built=0
{
  echo "==== configure"
  timeout "$(left 180)" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTAINTPOOL_CUDA=ON -DTAINTPOOL_TORCH=AUTO "${test_flags[@]}" "${gtest_args[@]}" \
    -DTAINTPOOL_BUILD_BENCHMARKS=OFF -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON \
    -DTAINTPOOL_BUILD_EXAMPLES=OFF -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF
} >>"$OUT/build.log" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
  targets="taintpool_stream_bench taintpool_gpu_bench"
  [ "$have_gtest" = 1 ] && targets="$test_targets $targets"
  echo "==== build $targets" >>"$OUT/build.log"
  # shellcheck disable=SC2086
  # -k 0: a target that fails to build costs only itself.
  timeout "$(left 240)" cmake --build "$build" -j"$jobs" --target $targets -- -k 0 \
    >>"$OUT/build.log" 2>&1
  rc=$?
  built=1 # ctest runs whatever did build (a binary that did not has no tests registered).
  row build "$(verdict $rc)" "$(cd "$build" 2>/dev/null && for t in $targets; do
    [ -n "$(find . -name "$t" -type f -perm -u+x | head -1)" ] && printf '%s ' "$t" || printf '(%s missing) ' "$t"
  done)"
else
  row configure "$(verdict $rc)" "build.log"
fi
# The c10 baseline on its own: a torch whose headers do not build here
# costs only this binary.
stream_bench="$build/bench/gpu/taintpool_stream_bench"
if grep -q "taintpool_stream_bench_c10" "$build/build.ninja" 2>/dev/null; then
  echo "==== build taintpool_stream_bench_c10" >>"$OUT/build.log"
  timeout "$(left 120)" cmake --build "$build" -j"$jobs" --target taintpool_stream_bench_c10 \
    >>"$OUT/build.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] && stream_bench="$build/bench/gpu/taintpool_stream_bench_c10"
  row "build (c10 baseline)" "$(verdict $rc)" "$(grep -m1 -o 'torch [^ ]* at [^ ]*' "$OUT/build.log" || echo '')"
else
  row "build (c10 baseline)" skipped "no torch found at configure time (build.log)"
fi

# ---- 4. the stream benchmark, on a quiet GPU, before the tests
# libc10_cuda.so's own dependencies (libcudart.so.13 and friends) live in
# the nvidia wheels beside torch, which torch's import preloads; a plain
# executable needs them on the path.
torch_libs="$(python3 -c 'import glob, os, torch; d = os.path.dirname(torch.__file__); print(":".join([d + "/lib"] + sorted(glob.glob(d + "/../nvidia/*/lib"))))' 2>/dev/null)"
if [ -x "$stream_bench" ]; then
  echo "==== $stream_bench" >>"$OUT/bench.log"
  LD_LIBRARY_PATH="${torch_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout "$(left 150)" "$stream_bench" --out "$OUT/stream_bench.md" >>"$OUT/bench.log" 2>&1
  rc=$?
  row "stream bench ($(basename "$stream_bench"))" "$(verdict $rc)" "stream_bench.md"
  if [ ! -s "$OUT/stream_bench.md" ] && [ "$stream_bench" != "$build/bench/gpu/taintpool_stream_bench" ] &&
    [ -x "$build/bench/gpu/taintpool_stream_bench" ]; then
    echo "==== taintpool_stream_bench (without c10)" >>"$OUT/bench.log"
    timeout "$(left 150)" "$build/bench/gpu/taintpool_stream_bench" --out "$OUT/stream_bench.md" \
      >>"$OUT/bench.log" 2>&1
    rc=$?
    row "stream bench (without c10)" "$(verdict $rc)" "stream_bench.md"
  fi
elif [ -x .gpu-prebuilt/taintpool_stream_bench ]; then
  timeout "$(left 150)" .gpu-prebuilt/taintpool_stream_bench --out "$OUT/stream_bench.md" \
    >>"$OUT/bench.log" 2>&1
  rc=$?
  row "stream bench (prebuilt)" "$(verdict $rc)" "stream_bench.md"
else
  row "stream bench" "not run" "not built"
fi

# ---- 5. GPU tests and compute-sanitizer, side by side (the tests do not
# time anything; the sanitizer runs take longest, so they start at once)
if [ "$built" = 1 ] && [ "$have_gtest" = 1 ]; then
  budget="$(left 240)"
  timeout "$budget" ctest --test-dir "$build" -L gpu -LE "sanitizer|bench|nccl" -j4 \
    --output-on-failure >"$OUT/ctest.log" 2>&1 &
  tests_pid=$!
  timeout "$budget" ctest --test-dir "$build" -L sanitizer -j8 --output-on-failure \
    >"$OUT/sanitizer.log" 2>&1 &
  sanitizer_pid=$!
  wait "$tests_pid"
  rc=$?
  row "GPU tests (ctest -L gpu)" "$(verdict $rc)" \
    "$(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
  skipped="$(grep -c -E '\*\*\*Skipped|Not Run' "$OUT/ctest.log")"
  [ "$skipped" != 0 ] && row "GPU tests skipped" "$skipped" "$(grep -E '\*\*\*Skipped' "$OUT/ctest.log" | head -3 | sed -E 's/ +/ /g' | tr '\n' ';')"
  wait "$sanitizer_pid"
  rc=$?
  row "compute-sanitizer (memcheck + racecheck, NVTX regions)" "$(verdict $rc)" \
    "$(grep -E 'tests passed|tests failed' "$OUT/sanitizer.log" | tail -1)"
  # The NVTX-region expectations one by one (issue 15): what each tool said
  # with and without the pool described to it.
  grep -E "cuda_(initcheck|memcheck)_(recycled_read|one_past_write|arena|nvtx)" "$OUT/sanitizer.log" |
    grep -E "Passed|Failed|Skipped|Timeout" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /    /' >>"$summary"
  grep -hE "(ERROR|RACECHECK|LEAK) SUMMARY" "$OUT/sanitizer.log" | sort | uniq -c |
    sed 's/^/    /' >>"$summary"
elif [ -x .gpu-prebuilt/cuda_streams_test ]; then
  : >"$OUT/ctest.log"
  for t in $test_targets; do
    timeout "$(left 90)" ".gpu-prebuilt/$t" --gtest_brief=1 >>"$OUT/ctest.log" 2>&1
    rc=$?
    row "GPU test $t (prebuilt)" "$(verdict $rc)" "$(grep -E '^\[  (PASSED|FAILED) ' "$OUT/ctest.log" | tail -1)"
  done
  : >"$OUT/sanitizer.log"
  status=ok
  for t in cuda_storage_test cuda_device_test cuda_checked_test cuda_streams_test; do
    for tool in memcheck racecheck; do
      timeout "$(left 60)" tests/cuda/sanitize.sh "$tool" ".gpu-prebuilt/$t" --gtest_brief=1 \
        >>"$OUT/sanitizer.log" 2>&1 || status="FAILED ($t $tool)"
    done
  done
  row "compute-sanitizer (prebuilt)" "$status" "sanitizer.log"
elif [ "$have_gtest" = 1 ]; then
  row "GPU tests and compute-sanitizer" "not run" "the build failed (build.log)"
else
  row "GPU tests and compute-sanitizer" "not run" "no GoogleTest and no .gpu-prebuilt"
fi

# ---- 6. the pool's GPU benchmark, if time is left
if [ -x "$build/bench/gpu/taintpool_gpu_bench" ] && [ $((deadline - SECONDS)) -ge 150 ]; then
  echo "==== taintpool_gpu_bench" >>"$OUT/bench.log"
  timeout "$(left 200)" "$build/bench/gpu/taintpool_gpu_bench" --out "$OUT/gpu_bench.md" \
    >>"$OUT/bench.log" 2>&1
  rc=$?
  row "pool GPU bench (taintpool_gpu_bench)" "$(verdict $rc)" "gpu_bench.md"
else
  row "pool GPU bench" skipped "$((deadline - SECONDS)) s left"
fi

# ---- the summary, last
{
  echo
  echo "| stage | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  if [ -s "$OUT/stream_bench.md" ]; then
    grep -E "^\| (bare launch, cudaLaunchKernelExC|\*\*the scope alone|the scope alone, 3|crossing: |breakdown: )" "$OUT/stream_bench.md"
    grep -E "^Crossing launches" "$OUT/stream_bench.md"
    echo "threads: | n | raw launches/s | raw ns | Device launches/s | Device ns | host launches/s | host ns |"
    grep -E "^\| [1248] \|" "$OUT/stream_bench.md"
    echo "pipeline: | activation | taintpool | cudaMallocAsync | c10 | outputs right |"
    grep -E "^\| [0-9]+ MiB \|" "$OUT/stream_bench.md"
  fi
  echo "elapsed: ${SECONDS} s; logs in $OUT"
} >>"$summary"
cat "$summary"
