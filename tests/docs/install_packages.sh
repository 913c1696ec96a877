sudo apt-get update
sudo apt-get install --no-install-recommends \
  cmake ninja-build g++ make libopenmpi-dev openmpi-bin libeigen3-dev \
  nlohmann-json3-dev libgtest-dev libcli11-dev libplplot-dev plplot-driver-cairo \
  iproute2 iputils-ping util-linux libpetsc-real-dev pkg-config lld \
  python3 python3-dev pybind11-dev python3-numpy python3-mpi4py python3-scipy \
  python3-pytest python3-matplotlib python3-flake8 mypy \
  python3-venv python3-setuptools python3-wheel
