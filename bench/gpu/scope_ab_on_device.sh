#!/bin/bash
# The launch scope before and after a change, on the GPU machine's own CPU
# (issue 11, item 7). Instruction counts and times on the development
# machine have not predicted the GPU host's Intel CPU (bench/RESULTS.md, run
# EJ), so a launch-path change is judged here: both trees'
# `taintpool_stream_bench --scope-only` run alternately (before/after, then
# after/before, ...) on one pinned core of the same lease:
#
#   git archive <base> | tar -x -C out/before    # here, before the call: the whole
#   tree (CMakeLists.txt enters folders by what it finds); traces and corpora may go
#   run: ROUNDS=6 OUT=$OUT bash bench/gpu/scope_ab_on_device.sh out/before
#        (carry: ["out/before"])
#
# "After" is this tree; its bench is taken from build-gpu/ when
# run_on_device.sh already built it in the same call, else built. Writes
# $OUT/ab/{before,after}-N.md (each round's whole table) and prints, per
# row of interest, the median (min-max) of each side and after / before,
# then every round's figures with each scope's share of its round's bare launch.
set -u
export PATH=/usr/local/cuda/bin:$PATH
before_src="${1:?usage: scope_ab_on_device.sh BEFORE_SOURCE_TREE}"
rounds="${ROUNDS:-6}"
core="${CORE:-3}"
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT/ab"
jobs="$(nproc)"

build_bench() { # source tree, build dir -> path of the bench (empty on failure)
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON \
    -DTAINTPOOL_TORCH=OFF -DTAINTPOOL_BUILD_TESTS=OFF -DTAINTPOOL_BUILD_BENCHMARKS=OFF \
    -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON -DTAINTPOOL_BUILD_EXAMPLES=OFF \
    -DTAINTPOOL_WARNINGS_AS_ERRORS=OFF >>"$OUT/ab/build.log" 2>&1 &&
    cmake --build "$2" -j"$jobs" --target taintpool_stream_bench >>"$OUT/ab/build.log" 2>&1 &&
    find "$2" -name taintpool_stream_bench -type f -perm -u+x | head -1
}

after_bin="$(find build-gpu -name taintpool_stream_bench -type f -perm -u+x 2>/dev/null | head -1)"
[ -n "$after_bin" ] || after_bin="$(build_bench . "$PWD/build-ab-after")"
before_bin="$(build_bench "$before_src" "$PWD/build-ab-before")"
if [ -z "$after_bin" ] || [ -z "$before_bin" ]; then
  echo "scope_ab: a build failed (ab/build.log)"
  tail -20 "$OUT/ab/build.log"
  exit 1
fi

for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for side in $order; do
    bin="$before_bin"
    [ "$side" = after ] && bin="$after_bin"
    taskset -c "$core" "$bin" --scope-only --out "$OUT/ab/$side-$round.md" >/dev/null 2>&1 ||
      echo "scope_ab: $side round $round failed"
  done
done

# One line per row: median (min-max) over the rounds, each side, and the ratio of medians.
python3 - "$OUT/ab" "$rounds" <<'EOF'
import re, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
rows = [("bare cudaLaunchKernelExC", "cudaLaunchKernelExC (the reference)"),
        ("plain launch(), scope alone", "**the scope alone** (body reports"),
        ("submit(), scope alone", "**the scope alone through Device::submit**"),
        ("plan (submit), scope alone", "**the scope alone through a LaunchPlan"),
        ("HostBackend bookkeeping", "breakdown: the same scope on HostBackend"),
        ("crossing scope alone", "crossing: the scope alone")]
def figure(path, label):
    try:
        for line in open(path):
            if label in line:
                return float(line.split("|")[2].strip().strip("*"))
    except OSError:
        pass
    return None
for name, label in rows:
    sides = {}
    for side in ("before", "after"):
        sides[side] = [v for v in (figure(f"{folder}/{side}-{r}.md", label)
                                   for r in range(1, rounds + 1)) if v is not None]
    if not sides["before"] or not sides["after"]:
        print(f"{name}: missing")
        continue
    b, a = statistics.median(sides["before"]), statistics.median(sides["after"])
    print(f"{name}: before {b:.1f} ({min(sides['before']):.1f}-{max(sides['before']):.1f}) "
          f"after {a:.1f} ({min(sides['after']):.1f}-{max(sides['after']):.1f}) "
          f"after/before {a / b:.3f}; per round before {sides['before']} after {sides['after']}")

# The same figures round by round, each scope also as a share of its own
# round's bare launch: the GPU hosts' CPUs switch between a fast and a slow
# speed from one process to the next (bench/RESULTS.md, runs EN and EO),
# which moves the CPU-only bookkeeping (the host column) about 2x and the
# bare launch 10-20%, so medians over rounds mix speeds and only a round's
# own ratios compare like with like. A markdown table, for RESULTS.md.
print("| round | side | bare | plain | submit | plan | host |")
print("|---|---|---:|---:|---:|---:|---:|")
for r in range(1, rounds + 1):
    for side in ("before", "after"):
        values = [figure(f"{folder}/{side}-{r}.md", label) for _, label in rows[:5]]
        if None in values:
            print(f"| {r} | {side} | missing | | | | |")
            continue
        bare, plain, submit, plan, host = values
        share = lambda v: f"{v:.1f} ({100 * v / bare:.2f}%)"
        print(f"| {r} | {side} | {bare:,.0f} | {share(plain)} | {share(submit)} | {share(plan)} "
              f"| {host:.1f} |")
EOF
