"""The build of dkernel's compiled loops (``src/_dkernel_compiled``): Cython modules over C loops.

Everything else about the package is in pyproject.toml. The loops are built
for the architecture's baseline, the hot ones also for AVX2 and AVX-512,
picked at load time (``simd.h``); never for the build machine alone, so a
wheel runs on any CPU of its architecture.
"""

import os
import tempfile
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

SOURCES = Path("src") / "_dkernel_compiled"
MODULES = ("alignment", "gradient", "mirror", "on_demand", "rbf", "select", "smo")

#: Optimized, without debug information (a fifth of the size); the IEEE operations as written: no multiply-add
#: contracted into an FMA (the RBF map's exponential gives the bits of its NumPy twin); FP exceptions not
#: trapped, so that loops with selects vectorize (no value changes: NaN and infinities propagate as written);
#: vector reductions where a loop asks for one (OpenMP's SIMD pragma alone, no OpenMP runtime). Each kept
#: where the compiler accepts it.
UNIX_FLAGS = ("-O3", "-g0", "-ffp-contract=off", "-fno-trapping-math", "-fopenmp-simd")
MSVC_FLAGS = ("/O2", "/fp:precise")


def accepted(compiler, flag):
    """Whether ``compiler`` compiles a C file with ``flag``."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "flag.c"
        source.write_text("int dk_flag(void) { return 0; }\n")
        try:
            compiler.compile([str(source)], output_dir=folder, extra_postargs=[flag])
        except CompileError:
            return False
    return True


class BuildCompiledLoops(build_ext):
    """``build_ext`` with the flags the compiler at hand accepts, the modules built in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        candidates = MSVC_FLAGS if self.compiler.compiler_type == "msvc" else UNIX_FLAGS
        flags = [flag for flag in candidates if accepted(self.compiler, flag)]
        for extension in self.extensions:
            extension.extra_compile_args = flags + list(extension.extra_compile_args)
        super().build_extensions()


headers = sorted(str(path) for path in SOURCES.glob("*.h"))
extensions = [
    Extension(f"_dkernel_compiled.{name}", [str(SOURCES / f"{name}.pyx")], include_dirs=[str(SOURCES)],
              depends=headers)
    for name in MODULES
]

setup(
    ext_modules=cythonize(extensions, compiler_directives={"language_level": 3}),
    cmdclass={"build_ext": BuildCompiledLoops},
)
