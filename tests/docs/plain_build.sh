# doc:begin build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)"
ctest --test-dir build --parallel "$(nproc)"
# doc:end build
# doc:begin options
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DADGRAPH_PYTHON_EXECUTABLE=/usr/bin/python3 -DADGRAPH_NATIVE=OFF
# doc:end options
