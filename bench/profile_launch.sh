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
set -eu
binary="${1:-build/release/bench/launch_profile}"
launches=20000
for shape in ${SHAPES:-host host-submit async streams streams-submit cross fresh-trusted fresh-never manager-trusted manager-never}; do
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
