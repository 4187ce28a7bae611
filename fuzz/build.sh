#!/bin/bash -eu
# Builds every fuzz target in fuzz/targets.txt, OSS-Fuzz style.
#
# Honours the OSS-Fuzz build environment — $CC $CXX $CFLAGS $CXXFLAGS
# $LIB_FUZZING_ENGINE $OUT $WORK — and fills in local defaults when run
# outside it: clang-14, libFuzzer, AddressSanitizer + UndefinedBehaviorSanitizer,
# OUT=build-fuzz/out and WORK=build-fuzz/work under the repository root.
#
# Puts into $OUT, per target: the binary, <target>.options, <target>.dict
# (when the target has one) and <target>_seed_corpus.zip (the committed
# fuzz/corpus/<target>/ plus fuzz/regressions/<target>/, so past crashes are
# re-run first).
#
# Environment knobs beyond OSS-Fuzz's:
#   TAINTPOOL_WERROR=OFF   keep building when a newer compiler (OSS-Fuzz's
#                          clang) warns about something clang-14 and g++ 12
#                          accept; locally the default is ON, as everywhere.
#   CMAKE_GENERATOR        Ninja when ninja is installed, else Unix Makefiles.
#   TAINTPOOL_FUZZ_TARGETS only these targets (fuzz/campaign --targets).
#   SANITIZER              as OSS-Fuzz names it, for the local defaults only:
#                          address (the default: ASan + UBSan) or memory
#                          (MemorySanitizer with origin tracking; fuzz/campaign
#                          --sanitizer memory). Ignored when CFLAGS/CXXFLAGS
#                          are given, as OSS-Fuzz gives them.

# The shebang's -eu is not enough: `bash fuzz/build.sh` ignores it, and then
# a failed compile went on to copy the last good binaries into $OUT as if
# they were this tree's. Set here, it holds however the script is started.
set -euo pipefail

# The repository: next to this script normally; OSS-Fuzz copies build.sh to
# $SRC/build.sh and the repository to $SRC/taintpool.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ -f "$here/../fuzz/targets.txt" ]]; then
  repo=$(cd "$here/.." && pwd)
elif [[ -n "${SRC:-}" && -f "$SRC/taintpool/fuzz/targets.txt" ]]; then
  repo="$SRC/taintpool"
else
  echo "build.sh: cannot find the taintpool repository (looked next to $here and in \$SRC/taintpool)" >&2
  exit 1
fi

sanitize="-fsanitize=address,undefined -fno-sanitize-recover=all"
if [[ "${SANITIZER:-address}" == memory ]]; then
  # The ignore list: libstdc++'s std::string, which the uninstrumented
  # libstdc++.so and libFuzzer call on strings MSan never saw written.
  sanitize="-fsanitize=memory -fsanitize-memory-track-origins=2"
  sanitize+=" -fsanitize-ignorelist=$repo/fuzz/msan_ignorelist.txt"
fi
: "${CC:=clang-14}"
: "${CXX:=clang++-14}"
: "${CFLAGS:=-O1 -g -fno-omit-frame-pointer $sanitize -fsanitize=fuzzer-no-link}"
: "${CXXFLAGS:=-O1 -g -fno-omit-frame-pointer $sanitize -fsanitize=fuzzer-no-link}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
: "${OUT:=$repo/build-fuzz/out}"
: "${WORK:=$repo/build-fuzz/work}"
: "${TAINTPOOL_WERROR:=ON}"
if [[ -z "${CMAKE_GENERATOR:-}" ]]; then
  if command -v ninja >/dev/null; then CMAKE_GENERATOR=Ninja; else CMAKE_GENERATOR="Unix Makefiles"; fi
fi
export CC CXX CFLAGS CXXFLAGS

mkdir -p "$OUT" "$WORK"
build="$WORK/cmake"

# CMake reads CFLAGS/CXXFLAGS from the environment on the first configure
# only; pass them explicitly so a changed environment takes effect.
cmake -S "$repo" -B "$build" -G "$CMAKE_GENERATOR" \
  -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DTAINTPOOL_BUILD_FUZZERS=ON -DTAINTPOOL_BUILD_TESTS=OFF -DTAINTPOOL_BUILD_BENCHMARKS=OFF \
  -DTAINTPOOL_WARNINGS_AS_ERRORS="$TAINTPOOL_WERROR" \
  -DTAINTPOOL_FUZZ_ENGINE="$LIB_FUZZING_ENGINE"

# TAINTPOOL_FUZZ_TARGETS (space- or comma-separated) narrows the build, as
# fuzz/campaign --targets does; OSS-Fuzz builds every target.
targets=$(awk '/^[A-Za-z0-9_]/ { print $1 }' "$repo/fuzz/targets.txt")
if [[ -n "${TAINTPOOL_FUZZ_TARGETS:-}" ]]; then
  targets=${TAINTPOOL_FUZZ_TARGETS//,/ }
fi
# shellcheck disable=SC2086 # one word per target
cmake --build "$build" --parallel "${TAINTPOOL_BUILD_JOBS:-$(nproc)}" --target $targets

for target in $targets; do
  cp "$build/fuzz/$target" "$OUT/"
  for extra in options dict; do
    if [[ -f "$repo/fuzz/$target.$extra" ]]; then
      cp "$repo/fuzz/$target.$extra" "$OUT/"
    fi
  done
  seeds=()
  for dir in corpus regressions; do
    if [[ -d "$repo/fuzz/$dir/$target" ]]; then
      while IFS= read -r -d '' file; do seeds+=("$file"); done \
        < <(find "$repo/fuzz/$dir/$target" -maxdepth 1 -type f ! -name 'README*' -print0)
    fi
  done
  rm -f "$OUT/${target}_seed_corpus.zip"
  if ((${#seeds[@]} > 0)); then
    if command -v zip >/dev/null; then
      zip -q -j "$OUT/${target}_seed_corpus.zip" "${seeds[@]}"
    else
      echo "build.sh: zip is not installed; $OUT/${target}_seed_corpus.zip not written" >&2
    fi
  fi
done
echo "build.sh: built ${targets//$'\n'/ } into $OUT"
