# What the bench scripts share; sourced after setting root to the repository's top folder.
# Builds go to $BENCH_BUILD_DIR (default build-bench, Release, apart from build/'s
# RelWithDebInfo) with $JOBS jobs (default 2).
# shellcheck shell=bash
# shellcheck source=../test/lib/crds.sh
source "$root/test/lib/crds.sh"
build_dir=${BENCH_BUILD_DIR:-$root/build-bench}
jobs=${JOBS:-2}
launcher=$root/test/controlplane/launch.sh

# Configures the bench build folder and builds the targets named.
bench_build() {
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" -j "$jobs" --target "$@"
}
