# Shared by scripts/test and scripts/demo: install what is missing, then
# configure and build. Sourced, not run.

ADGRAPH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ADGRAPH_BUILD="${ADGRAPH_BUILD:-$ADGRAPH_ROOT/build}"
ADGRAPH_PACKAGES=(cmake ninja-build g++ make libopenmpi-dev openmpi-bin
  libeigen3-dev nlohmann-json3-dev libgtest-dev libcli11-dev libplplot-dev
  plplot-driver-cairo iproute2 iputils-ping util-linux
  # A faster linker for the build (ADGRAPH_LLD); GNU ld without it.
  lld
  # The sparse layer: PETSc 3.18 with Hypre, MUMPS and SuperLU_dist.
  libpetsc-real-dev pkg-config
  # The Python front end: Debian's interpreter (/usr/bin/python3) and its
  # packages, which CMake and the tests use.
  python3 python3-dev pybind11-dev python3-numpy python3-mpi4py python3-scipy
  python3-pytest python3-matplotlib python3-flake8
  # The generated type stubs are checked with mypy --strict (python/test_stubs).
  mypy
  # `pip install --no-build-isolation .` into a venv (tests/python/pip_install).
  python3-venv python3-setuptools python3-wheel)

# Open MPI refuses root and more ranks than cores unless told otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

adgraph_install_packages() {
  local missing=()
  for p in "${ADGRAPH_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "adgraph: installing ${missing[*]}"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# ccache reuses objects compiled with a precompiled header
# (cmake/AdgraphPch.cmake) only with these sloppinesses.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime

adgraph_build() {
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$ADGRAPH_ROOT" -B "$ADGRAPH_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
  cmake --build "$ADGRAPH_BUILD" --parallel "$(nproc)"
}
