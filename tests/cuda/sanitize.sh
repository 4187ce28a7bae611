#!/bin/sh
# Runs one GPU test binary under compute-sanitizer memcheck; exit 77 (ctest:
# skipped) where there is no sanitizer or no GPU. Leaks are errors; CUDA API
# errors are not (the tests provoke launch failures on purpose).
binary="$1"
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
exec "$sanitizer" --tool memcheck --leak-check full --report-api-errors no --error-exitcode 1 \
  "$binary"
