#!/usr/bin/env bash
# The out-of-tree plugin build, as a user would do it: install vpipe, build
# examples/vignette against the installed package (find_package(vpipe)), load
# the result into the installed vpipe and run it in a chain.
#   tests/oot/build-plugin.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/examples/vignette" -B "$work/vignette" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$work/vignette" >/dev/null
test -f "$work/vignette/vignette.so"
# Only the plugin just built: no default directory.
export VPIPE_PLUGIN_DIR=
# The list is read whole before it is searched: grep -q stops at the match, and under pipefail
# the SIGPIPE vpipe then gets while still writing (fps= put vignette in the first 4 KiB) failed
# the test.
listed=$("$work/prefix/bin/vpipe" --plugin "$work/vignette/vignette.so" filters)
grep -q '^vignette$' <<<"$listed"
"$work/prefix/bin/vpipe" --plugin "$work/vignette/vignette.so" transcode "$src/media/sample-720p.mp4" \
  "$work/out.mp4" --device cpu --frames 10 --vf "resize=640x360,vignette=strength=0.5" 2>"$work/err"
test -s "$work/out.mp4"
echo "out-of-tree plugin: built against $work/prefix, loaded, ran in a chain"
