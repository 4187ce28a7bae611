#!/bin/bash
set -o pipefail
# Runs one program under a compute-sanitizer tool and asserts what the tool
# says about it: that it reports a given error, or that it reports nothing.
# The counterpart of sanitize.sh (which fails on any report) for programs
# that make a mistake on purpose (sanitizer_probe, issue 15). Exit 77
# (ctest: skipped) where there is no sanitizer or no GPU, or when the
# program itself skips.
#
#   tests/cuda/sanitizer_expect.sh memcheck|initcheck report|silent TEXT PROGRAM [arguments...]
#
#   report   the tool must report TEXT (e.g. "Invalid __global__ write of
#            size 1") with a non-zero error summary and exit code;
#   silent   the tool must report no error at all ("ERROR SUMMARY: 0
#            errors"), TEXT must not appear, and the program must exit 0.
# Either way the program must have run to its end: its output must hold
# "sanitizer_probe: done".
tool="$1"
expect="$2"
text="$3"
shift 3
case "$tool" in memcheck | initcheck) ;; *)
  echo "usage: sanitizer_expect.sh memcheck|initcheck report|silent TEXT PROGRAM [arguments]" >&2
  exit 2
  ;;
esac
case "$expect" in report | silent) ;; *)
  echo "sanitizer_expect.sh: expect report or silent, not $expect" >&2
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
# NVTX is on by default since CUDA 12; --nvtx yes says so for older tools.
"$sanitizer" --tool "$tool" --nvtx yes --error-exitcode 1 "$@" 2>&1 | tee "$log"
status=$?
if grep -q "sanitizer_probe: .*: skipped" "$log"; then
  exit 77
fi
if ! grep -q "sanitizer_probe: done" "$log"; then
  echo "sanitizer_expect.sh: the program did not run to its end under $tool"
  exit 1
fi
if [ "$expect" = report ]; then
  if ! grep -qF "$text" "$log"; then
    echo "sanitizer_expect.sh: $tool did not report \"$text\""
    exit 1
  fi
  if ! grep -Eq "ERROR SUMMARY: [1-9]" "$log" || [ "$status" = 0 ]; then
    echo "sanitizer_expect.sh: $tool printed the error but counted none (exit $status)"
    exit 1
  fi
  echo "sanitizer_expect.sh: $tool reported \"$text\", as expected"
  exit 0
fi
if grep -qF "$text" "$log" || ! grep -q "ERROR SUMMARY: 0 errors" "$log" || [ "$status" != 0 ]; then
  echo "sanitizer_expect.sh: $tool was expected to be silent (exit $status)"
  exit 1
fi
echo "sanitizer_expect.sh: $tool silent, as expected"
exit 0
