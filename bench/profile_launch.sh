#!/bin/sh
# Instructions per Device launch, counted exactly by callgrind, for each
# shape of bench/launch_profile.cpp (see there). Run from the repository
# root after building launch_profile (Release: `cmake --preset release &&
# cmake --build build/release --target launch_profile`):
#
#   bench/profile_launch.sh [build/release/bench/launch_profile]
#
# Prints one line per shape: instructions per launch inside Device::launch
# (everything the Device does, the body's call included) — per cycle for
# the fresh-* and manager-* shapes (issue 15) — and the top functions by self cost. Needs valgrind.
#
# EVICT=1 bench/profile_launch.sh: instead, for the launch shapes, the cache
# lines one launch needs when it finds none of its own (launch_profile's
# LAUNCH_PROFILE_EVICT: a pass over 64 KiB of data and 48 KiB of code after
# every launch, as a real launch's driver work does), simulated by
# callgrind's cache model with one core of a server part (L1i 32 KiB, L1d
# 48 KiB, a 2 MiB L2 as the last level): instruction and data lines missed
# in L1 per launch, the pass's own misses left out. Each is an L2 hit the
# scope waits for beside real launches (issue 11, item 7). To time one cache
# at a time, run launch_profile itself with LAUNCH_PROFILE_EVICT=data or =code.
set -eu
binary="${1:-build/release/bench/launch_profile}"
launches=20000
if [ "${EVICT:-0}" = 1 ]; then
  for shape in ${SHAPES:-host host-submit host-plan host-plan-submit async streams streams-submit streams-plan}; do
    out="$(mktemp)"
    LAUNCH_PROFILE_EVICT=1 valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 \
      --D1=49152,12,64 --LL=2097152,16,64 --callgrind-out-file="$out" \
      --toggle-collect='*run_launches<true>*' --toggle-collect='*run_launches_via_submit<true>*' \
      --toggle-collect='*run_launches_planned<true>*' \
      --toggle-collect='*run_launches_planned_via_submit<true>*' \
      "$binary" "$shape" "$launches" >/dev/null 2>&1
    # Only the evicting loops are collected: the 20 rounds of launches / 20.
    counted=$((launches / 20 * 20))
    callgrind_annotate --auto=no --show=Ir,I1mr,D1mr,D1mw "$out" 2>/dev/null | awk -v shape="$shape" -v n="$counted" '
      function num(s) { gsub(",", "", s); return s + 0 }
      /PROGRAM TOTALS/ { ir = num($1); i1 = num($3); dr = num($5); dw = num($7) }
      /Evictor::pass/ { ir -= num($1); i1 -= num($3); dr -= num($5); dw -= num($7) }
      END { printf "%s (evicted): %d instructions, %.1f code lines + %.1f data lines read + %.1f written, missed in L1 per launch\n", shape, ir / n, i1 / n, dr / n, dw / n }'
    rm -f "$out"
  done
  exit 0
fi
for shape in ${SHAPES:-host host-submit host-plan host-plan-submit async streams streams-submit streams-plan streams-plan-submit cross fresh-trusted fresh-never manager-trusted manager-never}; do
  out="$(mktemp)"
  valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='*run_launches*' \
    --toggle-collect='*run_cross_launches*' --toggle-collect='*run_fresh_cycles*' --toggle-collect='*run_manager_cycles*' \
    "$binary" "$shape" "$launches" >/dev/null 2>&1
  total="$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
  # The collected loops run the warm-up (64 launches, or 64 pairs) as well.
  case "$shape" in cross) counted=$((launches / 2 * 2 + 128)) ;; *) counted=$((launches + 64)) ;; esac
  case "$shape" in
    fresh-*) unit="create + first write + drop" ;;
    manager-*) unit="allocate + written + drop" ;;
    *) unit=launch ;;
  esac
  echo "$shape: $((total / counted)) instructions per $unit"
  callgrind_annotate "$out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | sed -n 2,9p |
    sed -E 's/\(([^()]|\([^()]*\))*\)( \[.*\])?$//' | cut -c1-110
  rm -f "$out"
done
