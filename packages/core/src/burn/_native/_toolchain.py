"""The system C compiler: found, probed for its flags once, and used to build shared libraries cached on
disk by source hash.

The compiler is ``CC`` where set, else the first of ``cc``, ``gcc``, ``clang`` on ``PATH``. None where
``BURN_CPU_NATIVE=0``, under Pyodide (no compiler, no ``dlopen`` of native code) or where none is found;
``status()`` then says why. The flags are the most of ``-O3 -march=native -fopenmp`` the compiler
accepts (probed on a tiny source, the result kept on disk per compiler), plus ``-fno-math-errno`` (the
kernels never read ``errno``, so ``sqrt`` may be an instruction) and never ``-ffast-math`` (NaN and
infinity must behave as numpy's do). A library lives at ``<cache>/native/<sha256>.so``, the hash over
the source, the compiler and its flags, so a second process (or run) loads it without compiling.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1  # bump when the generated sources' calling convention changes
_CANDIDATES = ("cc", "gcc", "clang")
# each flag set tried in turn, the first that builds a shared library with an OpenMP loop wins
_FLAG_SETS = (
    ("-O3", "-march=native", "-fopenmp"),
    ("-O3", "-fopenmp"),
    ("-O3", "-march=native"),
    ("-O2",),
)
_BASE = ("-shared", "-fPIC", "-std=c11", "-fno-math-errno")
_PROBE = """#include <stdint.h>
#include <math.h>
void probe(int64_t n, float* x) {
#pragma omp parallel for if(n > 4096)
  for (int64_t i = 0; i < n; i++) x[i] = sqrtf(x[i]);
}
"""
COMPILE_TIMEOUT_S = 120
# glibc's vector math library (libmvec): where it links, the math functions the kernels call are
# declared ``omp declare simd`` so loops over them vectorise (glibc's own headers declare them only
# under -ffast-math); each is within 4 ulp, the float ones measured here within 1e-7 of float64
MVEC_FUNCTIONS = (
    "exp",
    "expm1",
    "log",
    "log1p",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "erf",
)
MVEC_DECLARATIONS = (
    "#ifdef BURN_MVEC\n"
    + "".join(
        f"#pragma omp declare simd notinbranch\nextern {t} {name}{s}({t});\n"
        for name in MVEC_FUNCTIONS
        for t, s in (("float", "f"), ("double", ""))
    )
    + "#endif\n"
)
_MVEC_PROBE = (
    "#include <stdint.h>\n"
    + MVEC_DECLARATIONS
    + """#include <math.h>
void probe(int64_t n, float* x, double* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) { x[i] = tanhf(x[i]) + expf(x[i]) + erff(x[i]); y[i] = tanh(y[i]) + exp(y[i]); }
}
"""
)


@dataclass(frozen=True)
class Toolchain:
    """A usable compiler (``path``), the flags it accepts (``flags``) and the libraries kernels link
    (``libs``), or why there is none (``reason``, ``path`` empty)."""

    path: str
    flags: tuple[str, ...]
    reason: str = ""
    libs: tuple[str, ...] = ("-lm",)

    @property
    def available(self) -> bool:
        return bool(self.path)

    @property
    def openmp(self) -> bool:
        return "-fopenmp" in self.flags

    @property
    def mvec(self) -> bool:
        return "-DBURN_MVEC" in self.flags


_lock = threading.Lock()
_found: dict[tuple[str, str, str], Toolchain] = {}
_libraries: dict[str, ctypes.CDLL] = {}


def native_dir() -> Path:
    """Where compiled kernels are cached: ``<burn cache dir>/native`` (``BURN_CACHE_DIR`` honoured)."""
    from ..autotune._cache import cache_dir

    return cache_dir() / "native"


def find_compiler() -> tuple[str, str]:
    """(the compiler's path, "") or ("", why there is none)."""
    if os.environ.get("BURN_CPU_NATIVE", "").strip() == "0":
        return "", "BURN_CPU_NATIVE=0"
    if sys.platform == "emscripten":
        return "", "no C compiler under Pyodide"
    cc = os.environ.get("CC", "").strip()
    if cc:
        path = shutil.which(cc.split()[0])
        return (path, "") if path else ("", f"CC={cc} is not an executable")
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path, ""
    return "", "no C compiler (cc, gcc or clang) on PATH"


def toolchain() -> Toolchain:
    """The compiler and flags kernels are built with (probed once per process and compiler)."""
    path, reason = find_compiler()
    if not path:
        return Toolchain("", (), reason)
    key = (path, os.environ.get("BURN_CACHE_DIR", ""), os.environ.get("BURN_CPU_NATIVE", ""))
    with _lock:
        made = _found.get(key)
        if made is None:
            made = _found[key] = _probe(path)
    return made


def _probe(path: str) -> Toolchain:
    """The first flag set ``path`` builds the probe with; the answer is kept on disk per compiler."""
    try:
        stat = os.stat(path)
    except OSError as e:
        return Toolchain("", (), f"cannot stat {path}: {e}")
    memo = (
        native_dir() / f"flags-{hashlib.sha256(f'{path}:{stat.st_mtime_ns}'.encode()).hexdigest()[:16]}.json"
    )
    try:
        saved = json.loads(memo.read_text())
        return Toolchain(path, tuple(saved["flags"]), "", tuple(saved["libs"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    errors = []
    for flags in _FLAG_SETS:
        err = _compile(path, flags, ("-lm",), _PROBE, None)
        if err is None:
            libs: tuple[str, ...] = ("-lm",)
            if (
                "-fopenmp" in flags
                and _compile(path, (*flags, "-DBURN_MVEC"), ("-lmvec", "-lm"), _MVEC_PROBE, None) is None
            ):
                flags, libs = (*flags, "-DBURN_MVEC"), ("-lmvec", "-lm")
            try:
                memo.parent.mkdir(parents=True, exist_ok=True)
                memo.write_text(json.dumps({"compiler": path, "flags": list(flags), "libs": list(libs)}))
            except OSError:
                pass  # an unwritable cache: probe again next time
            return Toolchain(path, flags, "", libs)
        errors.append(err)
    return Toolchain("", (), f"{path} cannot build a shared library: {errors[-1]}")


def _compile(
    cc: str, flags: tuple[str, ...], libs: tuple[str, ...], source: str, out: Path | None
) -> str | None:
    """Build ``source`` into ``out`` (a scratch file when None) linking ``libs``; None on success, else
    the error (the compiler's message)."""
    with tempfile.TemporaryDirectory(prefix="burn-native-") as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_text(source)
        target = out if out is not None else Path(tmp) / "kernel.so"
        cmd = [cc, *flags, *_BASE, str(src), "-o", str(target), *libs]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{type(e).__name__}: {e}"
        if done.returncode != 0:
            return (done.stderr or done.stdout).strip()[-2000:] or f"exit status {done.returncode}"
    return None


def library_path(tc: Toolchain, source: str) -> Path:
    """Where the library of ``source`` built by ``tc`` is cached."""
    digest = hashlib.sha256(
        f"{FORMAT}\0{tc.path}\0{' '.join(tc.flags + tc.libs)}\0{source}".encode()
    ).hexdigest()
    return native_dir() / f"{digest}.so"


def build(tc: Toolchain, source: str) -> ctypes.CDLL:
    """The library of ``source``: loaded from the disk cache, else compiled into it (written under a
    scratch name and renamed, so processes building the same source at once never load a half-written
    file). Raises ``RuntimeError`` with the compiler's message where it fails."""
    target = library_path(tc, source)
    key = str(target)
    lib = _libraries.get(key)
    if lib is not None:
        return lib
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        try:
            err = _compile(tc.path, tc.flags, tc.libs, source, Path(scratch))
            if err is not None:
                raise RuntimeError(f"compiling a fused cpu kernel with {tc.path} failed: {err}")
            os.replace(scratch, target)
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)
    if tc.openmp:
        # idle OpenMP threads sleep rather than spin (libgomp spins for a while by default), so they
        # leave the cores to numpy's BLAS threads between kernels; read when libgomp loads, which
        # the first kernel library does (a setting of the user's own is kept)
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    lib = _libraries[key] = ctypes.CDLL(key)
    return lib
