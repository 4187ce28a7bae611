#!/bin/bash
set -o pipefail
# Runs one GPU test binary under a compute-sanitizer tool and fails on any
# report: memcheck (out-of-bounds and misaligned accesses, device faults,
# leaks — leak checking on) or racecheck (shared-memory hazards). Exit 77
# (ctest: skipped) where there is no sanitizer or no GPU.
#
#   tests/cuda/sanitize.sh memcheck|racecheck BINARY [gtest arguments...]
#
# CUDA API errors are not reported: the tests provoke launch failures on
# purpose. Any hazard or error the tool reports makes it exit 1 (ctest: failed).
tool="$1"
binary="$2"
shift 2
case "$tool" in
memcheck) extra="--leak-check full" ;;
racecheck) extra="--racecheck-report hazard" ;;
*)
  echo "usage: sanitize.sh memcheck|racecheck BINARY [arguments]" >&2
  exit 2
  ;;
esac
sanitizer="$(command -v compute-sanitizer || true)"
if [ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
fi
if [ -z "$sanitizer" ]; then
  echo "compute-sanitizer not found: skipped"
  exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU (nvidia-smi -L failed): skipped"
  exit 77
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086 # $extra is two words on purpose.
"$sanitizer" --tool "$tool" $extra --report-api-errors no --error-exitcode 1 \
  "$binary" "$@" 2>&1 | tee "$log"
status=$?
# Belt and braces: any non-zero summary fails, whatever the exit code said
# (racecheck counts some hazards as warnings).
if grep -Eq "(ERROR|RACECHECK) SUMMARY: [1-9]" "$log"; then
  echo "sanitize.sh: $tool reported problems in $binary"
  exit 1
fi
if ! grep -Eq "(ERROR|RACECHECK) SUMMARY: 0" "$log"; then
  echo "sanitize.sh: no $tool summary from $binary (did it run?)"
  exit 1
fi
exit "$status"
