#!/bin/bash
# Lays out, on the development machine, what bench/gpu/run_on_device.sh needs
# on a GPU machine that has the CUDA toolkit, cmake, ninja, g++ and PyTorch
# but no GoogleTest (and no network): GoogleTest's sources, copied from the
# Debian package here, into .deps/googletest (ignored by git; ~4 MB). Run it
# once from the repository root, then carry .deps with the device call:
#
#   bench/gpu/prepare_device.sh
#   run(command="bash bench/gpu/run_on_device.sh", carry=[".deps"])
#
# With --prebuilt it also builds the GPU test binaries and benchmarks here
# (Release) into .gpu-prebuilt/, which run_on_device.sh runs if it cannot
# build its own (carry ".gpu-prebuilt" too; mind the 64 MiB limit).
set -eu
root="$(git rev-parse --show-toplevel)"
cd "$root"
if [ ! -d /usr/src/googletest ]; then
  echo "prepare_device.sh: /usr/src/googletest missing: .ci/install-packages googletest" >&2
  exit 1
fi
rm -rf .deps/googletest
mkdir -p .deps
cp -r /usr/src/googletest .deps/googletest
echo "prepare_device.sh: .deps/googletest ($(du -sh .deps/googletest | cut -f1))"
if [ "${1:-}" = "--prebuilt" ]; then
  cmake -S . -B build/prebuilt -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CUDA=ON \
    -DTAINTPOOL_BUILD_TESTS=ON -DTAINTPOOL_GPU_TESTS_ONLY=ON -DTAINTPOOL_BUILD_BENCHMARKS=OFF \
    -DTAINTPOOL_BUILD_GPU_BENCHMARKS=ON -DTAINTPOOL_BUILD_EXAMPLES=OFF -DTAINTPOOL_TORCH=OFF \
    >/dev/null
  targets="cuda_storage_test cuda_device_test cuda_checked_test cuda_poison_test cuda_streams_test cuda_never_written_test cuda_nvtx_rules_test taintpool_stream_bench taintpool_gpu_bench"
  # shellcheck disable=SC2086
  cmake --build build/prebuilt -j"$(nproc)" --target $targets
  rm -rf .gpu-prebuilt
  mkdir -p .gpu-prebuilt
  for target in $targets; do
    file="$(find build/prebuilt -name "$target" -type f -perm -u+x | head -1)"
    strip -o ".gpu-prebuilt/$target" "$file"
  done
  echo "prepare_device.sh: .gpu-prebuilt ($(du -sh .gpu-prebuilt | cut -f1))"
fi
