#!/bin/bash
# Why the GPU hosts run the launch scope at two speeds (issue 11, item 7).
#
# On the leased H100/H200 hosts the CPU-only scope costs about twice as much
# in some processes as in others, while the bare launch moves 10-20%
# (bench/RESULTS.md, runs EN and EO). Run EO's rows pointed at a busy
# hyperthread beside the pinned core: the slower a row's code waits on
# memory or the device, the less it slows. This script tests that directly
# and rules out the other two explanations, on one lease. Its first run (EP,
# an H200 host) ruled out layout (one slow process among six with the same
# addresses) and the CUDA path (the CUDA-free bookkeeping slowed as much);
# that VM showed no sibling, so the direct test was not made there:
#
#   layout   each process's stack lands at a random offset (ASLR), which
#            changes which loads alias earlier stores: the same binary is
#            run alternately with ASLR on and off (setarch -R), and with ASLR
#            off under environments of several sizes (each moves the stack)
#   time     the speed drifts with the host's other tenants: repeats on
#            the same core, and one run on each of a few other cores
#   sibling  a busy loop pinned on the pinned core's hyperthread sibling,
#            where the VM shows one; and one on an unrelated core
#
#   run: OUT=$OUT bash bench/gpu/scope_modes_on_device.sh
#
# Builds taintpool_stream_bench (Release, CUDA) unless build-gpu/ has it,
# runs `--scope-only` each time (about 4 s), and prints one line per run:
# its name, then the bare launch, the scope alone through launch(),
# submit() and a LaunchPlan, the same scope on HostBackend (the Device's
# bookkeeping alone: no CUDA call), the Device's lock taken and released by
# its owner (a few instructions) and once revoked (a locked instruction
# that waits on memory), in ns: a busy sibling slows the first kinds about
# 2x and the last little. Writes each run's table
# to $OUT/modes/NAME.md.
set -u
export PATH=/usr/local/cuda/bin:$PATH
OUT="${OUT:-$PWD/gpu-out}"
core="${CORE:-3}"
mkdir -p "$OUT/modes"

nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null
lscpu | grep -E "Model name|Thread|Core\(s\)|Socket|Hypervisor"
siblings=$(cat "/sys/devices/system/cpu/cpu$core/topology/thread_siblings_list" 2>/dev/null)
echo "core $core's hyperthread siblings, as the VM shows them: ${siblings:-unknown}"

bin="$(find build-gpu -name taintpool_stream_bench -type f -perm -u+x 2>/dev/null | head -1)"
if [ -z "$bin" ]; then
  cmake -S . -B build-modes -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON \
    -DTAINTPOOL_TORCH=OFF -DTAINTPOOL_BUILD_TESTS=OFF -DTAINTPOOL_BUILD_BENCHMARKS=OFF \
    -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON -DTAINTPOOL_BUILD_EXAMPLES=OFF \
    -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF >"$OUT/modes/build.log" 2>&1 &&
    cmake --build build-modes -j"$(nproc)" --target taintpool_stream_bench >>"$OUT/modes/build.log" 2>&1
  bin="$(find build-modes -name taintpool_stream_bench -type f -perm -u+x 2>/dev/null | head -1)"
fi
if [ -z "$bin" ]; then
  echo "scope_modes: the build failed (modes/build.log)"
  tail -20 "$OUT/modes/build.log"
  exit 1
fi

run() { # NAME COMMAND-PREFIX...: one --scope-only run, one line
  local name=$1
  shift
  "$@" "$bin" --scope-only --out "$OUT/modes/$name.md" >/dev/null 2>&1 ||
    echo "scope_modes: $name failed"
  printf '%-14s' "$name"
  grep -E 'cudaLaunchKernelExC \(the reference\)|scope alone\*\* \(|through Device::submit\*\*|through a LaunchPlan \(submit\)\*\*, one stream|same scope on HostBackend|lock \+ unlock by its owner|bias is revoked' \
    "$OUT/modes/$name.md" | awk -F'|' '{printf " %9s", $3}'
  echo
}
padded() { # BYTES COMMAND...: the command under an environment BYTES larger
  local pad
  pad=$(head -c "$1" /dev/zero | tr '\0' x)
  shift
  PAD="$pad" "$@"
}
spin() { # CORE: a busy loop pinned there; prints its pid
  taskset -c "$1" sh -c 'while :; do :; done' >/dev/null 2>&1 &
  echo $!
}

echo "run: bare, plain launch(), submit(), plan (submit), HostBackend, lock, revoked lock (ns)"
for round in 1 2 3 4 5 6; do
  run "aslr-$round" taskset -c "$core"
  run "fixed-$round" setarch "$(uname -m)" -R taskset -c "$core"
done
for pad in 512 1024 1536 2048 2560 3072 3584; do
  run "fixed+$pad" padded "$pad" setarch "$(uname -m)" -R taskset -c "$core"
done
for other in 1 6 9 12; do
  run "core-$other" taskset -c "$other"
done
sibling=$(echo "$siblings" | tr ',-' '  ' | tr ' ' '\n' | grep -vx "$core" | head -1)
if [ -n "$sibling" ]; then
  pid=$(spin "$sibling")
  run "sibling-busy-1" taskset -c "$core"
  run "sibling-busy-2" taskset -c "$core"
  kill "$pid"
  run "sibling-idle" taskset -c "$core"
else
  echo "(the VM shows no sibling of core $core: the direct test cannot be made here)"
fi
pid=$(spin 8)
run "core8-busy" taskset -c "$core"
kill "$pid"
run "last" taskset -c "$core"
uptime
