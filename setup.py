"""Builds adgraph's extension module adgraph._adgraph with CMake for
`pip install --no-build-isolation .` (metadata: pyproject.toml), with the
type stubs (adgraph/*.pyi) the build generates from it.

The library and the module are compiled in a CMake tree of their own under
build/pip (tests, examples and benchmarks left out), for the interpreter
pip runs under. With ADGRAPH_BUILD_DIR set to an already configured tree
(the one scripts/test builds), only the module's target is built there and
copied: the install test uses it so as not to compile the library twice.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeModule(Extension):
    """The extension CMake's target _adgraph builds (no sources here)."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures (unless ADGRAPH_BUILD_DIR names a tree) and builds _adgraph."""

    def build_extension(self, ext):
        tree = os.environ.get("ADGRAPH_BUILD_DIR")
        if not tree:
            tree = str(pathlib.Path(self.build_temp).resolve() / "cmake")
            subprocess.run(
                ["cmake", "-S", str(ROOT), "-B", tree,
                 "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF",
                 "-DADGRAPH_BUILD_EXAMPLES=OFF", "-DADGRAPH_BUILD_BENCH=OFF",
                 f"-DADGRAPH_PYTHON_EXECUTABLE={sys.executable}"],
                check=True)
        subprocess.run(
            ["cmake", "--build", tree, "--target", "_adgraph", "adgraph_stubs",
             "--parallel", str(os.cpu_count() or 1)],
            check=True)
        package = pathlib.Path(tree) / "python" / "adgraph"
        built = sorted(package.glob("_adgraph*.so"))
        if not built:
            sys.exit(f"setup.py: CMake built no _adgraph module in {tree}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)
        # The type stubs generated from that module, beside it (not into
        # the sources for an in-place build).
        if not self.inplace:
            for stub in sorted(package.glob("*.pyi")):
                shutil.copyfile(stub, target.parent / stub.name)


setup(
    ext_modules=[CMakeModule("adgraph._adgraph")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build/pip"}},
)
