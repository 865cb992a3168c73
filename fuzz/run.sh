#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzzer.cpp) with clang into build-fuzz/ and runs each
# for SECONDS (default 60). Fails on the first crash, sanitizer report, leak, timeout (5 s per
# input) or OOM (1 GiB); the offending input is left in build-fuzz/artifacts/, and
# `build-fuzz/<target> <input>` replays it. New inputs go to build-fuzz/corpus/<target>, so
# the checked-in seeds in fuzz/corpus/<target> stay as they are.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
# clang 16: the code captures structured bindings in lambdas, which clang 14 rejects.
cxx=${FUZZ_CXX:-clang++-16}

# Symbolized sanitizer reports: clang-16's runtime looks only in its own folder, which holds
# no llvm-symbolizer unless the llvm-16 package is installed; any version will do.
if [[ -z "${ASAN_SYMBOLIZER_PATH:-}" ]] && command -v llvm-symbolizer >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer)
fi

cmake -S "$root/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo
targets=()
for src in "$root"/fuzz/*_fuzzer.cpp; do
  targets+=("$(basename "$src" .cpp)")
done
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"

mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  dict=()
  if [[ -f "$root/fuzz/$t.dict" ]]; then
    dict=("-dict=$root/fuzz/$t.dict")
  fi
  echo "== $t for ${seconds}s"
  "$build/$t" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=5 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
    "$build/corpus/$t" "$root/fuzz/corpus/$t"
done
echo "fuzz: no findings in ${#targets[@]} target(s), ${seconds}s each"
