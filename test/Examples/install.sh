#!/usr/bin/env bash
# The installed package: `cmake --install` into a temporary prefix, the
# example plugin built out of tree against it with find_package(Anvil), and
# the installed tools loading that plugin, down to a training executable
# linked from the installed runtime.
#
# usage: install.sh BUILD_DIR SOURCE_DIR WORK_DIR [CMAKE_GENERATOR]
# (ctest runs it as install-out-of-tree-plugin)
set -euo pipefail
build=$1 src=$2 work=$3 generator=${4:-Ninja}
fail() { echo "install.sh: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log" \
  || fail "cmake --install failed (see $work/install.log)"
for f in bin/anvil-compile bin/anvil-opt bin/anvil-interp bin/anvil-run \
         bin/anvil-inspect bin/anvil-make-shard \
         lib/libanvil_runtime.a lib/libanvil_cpu.a lib/libanvil_trainer.a \
         lib/libanvil_single.a lib/libAnvilDialect.a lib/libAnvilConversion.a \
         include/anvil/Dialect/Anvil/IR/AnvilInterfaces.td \
         include/anvil/Dialect/Anvil/IR/AnvilOps.h.inc \
         include/anvil/Conversion/ConvertToLinalgInterface.h \
         include/anvil/runtime/Status.h \
         lib/cmake/anvil/AnvilConfig.cmake lib/cmake/anvil/AnvilPlugin.cmake \
         lib/cmake/anvil/AnvilTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done
echo "install: $(find "$prefix" -type f | wc -l) files under the prefix"

# The plugin, out of tree: only the installed package.
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$src/examples/pass-plugin" -B "$work/plugin" -G "$generator" \
  -DAnvil_DIR="$prefix/lib/cmake/anvil" "${launcher[@]}" \
  > "$work/configure.log" 2>&1 \
  || fail "configuring the plugin failed (see $work/configure.log)"
cmake --build "$work/plugin" > "$work/build.log" 2>&1 \
  || fail "building the plugin failed (see $work/build.log)"
plugin=$work/plugin/libAnvilExamplePlugin.so
[ -f "$plugin" ] || fail "no $plugin"
echo "install: built libAnvilExamplePlugin.so out of tree"

# The installed tools with it.
tanh=$("$prefix/bin/anvil-compile" --model bert --config bert-tiny \
  --load-pass-plugin="$plugin" \
  --insert-pass='after:forward:example-gelu-tanh{modules=bert.encoder}' \
  --emit=forward | grep -c 'anvil.gelu tanh')
[ "$tanh" = 2 ] || fail "expected 2 tanh GELUs after example-gelu-tanh, got $tanh"
# (the help to a file first: grep -q would close the pipe early, and
# pipefail would count anvil-opt's SIGPIPE as a failure)
"$prefix/bin/anvil-opt" --load-pass-plugin="$plugin" --help > "$work/opt-help.txt"
grep -q -- '--example-flops-per-module' "$work/opt-help.txt" \
  || fail "anvil-opt --load-pass-plugin does not list the plugin's passes"
echo "install: anvil-compile and anvil-opt run the plugin's passes"

"$prefix/bin/anvil-compile" "$src/examples/pass-plugin/squared-relu-mlp.mlir" \
  --load-dialect-plugin="$plugin" --target=cpu --optimizer=sgd --lr=0.05 \
  -o "$work/sqrelu.train"
mkdir -p "$work/batch"
python3 "$src/test/Target/CPU/Inputs/make_mlp_batch.py" "$work/batch"
"$work/sqrelu.train" --batch-dir "$work/batch" --steps 50 \
  --log "$work/m.jsonl" --log-every 1 > /dev/null
python3 "$src/test/Target/CPU/Inputs/loss_falls.py" "$work/m.jsonl" \
  "install: squared-relu-mlp (installed tools, out-of-tree plugin)" 50 0.5
echo "install: ok"
