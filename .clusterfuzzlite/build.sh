#!/bin/bash -eu
# ClusterFuzzLite's build step ($SRC/build.sh in the builder image): build
# every target of fuzz/targets.txt with fuzz/build.sh, which honours the
# environment ClusterFuzzLite sets ($CC $CXX $CFLAGS $CXXFLAGS
# $LIB_FUZZING_ENGINE $SANITIZER $OUT $WORK) and leaves each target, its
# .options and its <target>_seed_corpus.zip (fuzz/corpus + fuzz/regressions)
# in $OUT. One build script for OSS-Fuzz, ClusterFuzzLite and fuzz/campaign.
exec "$SRC/taintpool/fuzz/build.sh" "$@"
