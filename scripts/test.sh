#!/usr/bin/env bash
#===- scripts/test.sh - set up, build and run every test -----------------===#
#
# The README's test command and what CI runs (.ci/run). ctest drives the lit
# suite and the GoogleTest binaries and prints the closing summary line
# ("100% tests passed, 0 tests failed out of N"). Extra arguments go to
# ctest, e.g. `scripts/test.sh -L lit` or `scripts/test.sh -R Cost`.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
