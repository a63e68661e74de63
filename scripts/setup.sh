#!/usr/bin/env bash
#===- scripts/setup.sh - install dependencies, configure and build -------===#
#
# Idempotent: installs only the Debian packages that are missing (running
# apt-get update only then), reconfigures only when needed, and rebuilds
# incrementally. Safe to run any number of times, from any directory.
#
#   scripts/setup.sh              install, configure and build into build/
#   ANVIL_BUILD_DIR=dir ...       build elsewhere
#   ANVIL_BUILD_TYPE=Debug ...    another CMake build type (default Release)
#   ANVIL_SKIP_INSTALL=1 ...      do not touch system packages
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${ANVIL_BUILD_TYPE:-Release}"

# Everything the project needs from Debian. LLVM/MLIR 22: find_package(MLIR)
# fails without mlir-22-tools (mlir-tblgen); llvm-22-tools has lit,
# FileCheck, not and count. python3 runs lit (/usr/bin/python3).
PACKAGES=(
  cmake ninja-build g++ ccache python3 xz-utils
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libgtest-dev libopenblas-dev
  libopenmpi-dev openmpi-bin
)

log() { printf '[setup] %s\n' "$*"; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all ${#PACKAGES[@]} present"
    return
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      log "missing packages: ${missing[*]}"
      log "run as root or install sudo (or set ANVIL_SKIP_INSTALL=1 and install them yourself)"
      exit 1
    fi
    sudo=(sudo)
  fi
  log "installing: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Python packages the tests use (NumPy: the independent reference of the
# interpreter's GPT test; ml_dtypes: the reference of the 8-bit float
# conversions), for the python3 first on PATH, which lit uses. Module names,
# which are also the pip names.
PY_PACKAGES=(numpy ml_dtypes)
install_python_packages() {
  local missing=()
  for p in "${PY_PACKAGES[@]}"; do
    python3 -c "import $p" 2>/dev/null || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Python packages: all ${#PY_PACKAGES[@]} present ($(command -v python3))"
    return
  fi
  log "pip installing: ${missing[*]}"
  if ! python3 -m pip --version >/dev/null 2>&1; then
    # Debian's own python3 has no pip until python3-pip is installed.
    PACKAGES=(python3-pip)
    install_packages
  fi
  python3 -m pip install -q "${missing[@]}" ||
    python3 -m pip install -q --break-system-packages "${missing[@]}"
}

# cuDNN's frontend (NVIDIA's header-only C++ API over cuDNN's graph API: the
# CUDA runtime builds its fused-attention graphs with it), for builds with
# the CUDA toolkit: the headers of this PyPI wheel, unpacked once into a
# cache outside the clone, where runtime/CMakeLists.txt looks for them.
CUDNN_FRONTEND_VERSION=1.32.0
CUDNN_FRONTEND_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/anvil/cudnn-frontend"
fetch_cudnn_frontend() {
  if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    return # no CUDA toolkit: the CUDA runtime is not built
  fi
  if [ "$(cat "$CUDNN_FRONTEND_DIR/VERSION" 2>/dev/null)" = "$CUDNN_FRONTEND_VERSION" ]; then
    log "cuDNN frontend $CUDNN_FRONTEND_VERSION present ($CUDNN_FRONTEND_DIR)"
    return
  fi
  log "fetching cuDNN frontend $CUDNN_FRONTEND_VERSION's headers"
  local tmp
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: \
    "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION" -d "$tmp"
  rm -rf "$CUDNN_FRONTEND_DIR"
  python3 - "$tmp" "$CUDNN_FRONTEND_DIR" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])
PY
  echo "$CUDNN_FRONTEND_VERSION" >"$CUDNN_FRONTEND_DIR/VERSION"
  rm -rf "$tmp"
}

if [ "${ANVIL_SKIP_INSTALL:-0}" != 1 ]; then
  install_packages
  install_python_packages
  fetch_cudnn_frontend
fi

# ccache keeps its cache outside the clone (~/.cache/ccache by default);
# relative paths let every clone of the project share it.
export CCACHE_BASEDIR="$ROOT"

# Configure when there is no build yet or the build type asked for changed;
# otherwise Ninja re-runs CMake itself when a CMakeLists.txt changes.
configured_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' \
  "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ "$configured_type" != "$BUILD_TYPE" ]; then
  log "configuring $BUILD_DIR ($BUILD_TYPE)"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
fi
log "building"
cmake --build "$BUILD_DIR"
log "done: tools in $BUILD_DIR/bin"
