"""nvfp4jit: NVFP4 block-scaled grouped GEMM kernels rendered and compiled at run time
(NVRTC + nvJitLink) for sm_90a (H100/H200) and sm_100a (B200), cached on disk.

This package binds libnvfp4jit with ctypes: importing it needs neither torch nor a GPU.
Without torch: variants(), compile(), inspect(), explain(), choose(), check(), cache_dir(),
Context. With torch (imported on first use): grouped_gemm(), Plan, tune(), the custom op
torch.ops.nvfp4jit.grouped_gemm, Weights + MoEPlan (a MoE layer with expert offsets on the
device), and nvfp4jit.gpumode.custom_kernel.
Errors raise nvfp4jit.Error (status, name, message).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import threading
import weakref

from . import _lib
from ._lib import Error, library_path, tool_path

__all__ = ["__version__", "Error", "Context", "Kernel", "variants", "compile", "inspect",
           "explain", "choose", "check", "cache_dir", "default_context", "grouped_gemm",
           "Plan", "tune", "Weights", "MoEPlan", "scale_bytes", "moe_scale_rows",
           "library_path", "tool_path"]

#: the version of the loaded library (one home: NVFP4JIT_VERSION_STRING in nvfp4jit.h)
__version__ = _lib.nvfp4jit_version_string().decode()

_ARCHS = {"sm_90a": 90, "sm90a": 90, "90": 90, "sm_100a": 100, "sm100a": 100, "100": 100}


def _arch(arch) -> int:
    """'sm_90a' / 'sm90a' / 90 -> 90 (NVFP4JIT_ARCH_SM90A); likewise sm_100a."""
    a = _ARCHS.get(str(arch).lower())
    if a is None:
        raise Error(3, f"arch '{arch}': expected sm_90a or sm_100a")
    return a


def _arch_name(a: int) -> str:
    return {90: "sm_90a", 100: "sm_100a"}.get(a, str(a))


def _vformat(v: _lib.Variant) -> str:
    buf = ctypes.create_string_buffer(128)
    _lib.nvfp4jit_variant_format(ctypes.byref(v), buf, len(buf))
    return buf.value.decode()


def _vparse(s: str) -> _lib.Variant:
    v = _lib.Variant()
    st = _lib.nvfp4jit_variant_parse(str(s).encode(), ctypes.byref(v))
    if st:
        raise Error(st, f"variant '{s}': expected the form of variants(), e.g. "
                        "sm90a:128x128x64:s4:swap:act16")
    return v


class Context:
    """A library context (nvfp4jit_ctx): the cache directory, compiled kernels, plans and
    the last error. Not thread-safe; the module functions use one per thread
    (default_context()) unless given ctx=.

    cache_dir: None = $NVFP4JIT_CACHE_DIR, else $XDG_CACHE_HOME/nvfp4jit, else
    ~/.cache/nvfp4jit. disk_cache=False: in-memory only. verbose: warnings on stderr."""

    def __init__(self, cache_dir=None, disk_cache=True, verbose=False):
        opts = _lib.CtxOptions(os.fsencode(cache_dir) if cache_dir else None,
                               0 if disk_cache else 1, 1 if verbose else 0)
        h = ctypes.c_void_p()
        st = _lib.nvfp4jit_ctx_create(ctypes.byref(opts), ctypes.byref(h))
        _lib.check(st, None)
        self._h = h
        self._kernels = {}
        self._plan_cache = {}              # grouped_gemm's plans (see _torch._cached_plan)
        self._live_plans = weakref.WeakSet()  # every open Plan, closed before the context
        self._pinned_plans = []            # cached plans that CUDA graphs captured: kept
        self._live_weights = weakref.WeakSet()  # MoE weights, closed after the plans
        self.disk_cache = bool(disk_cache)

    @property
    def handle(self) -> int:
        return self._h.value or 0

    def close(self):
        """Destroy the context, and first every plan made on it that is still open (so no
        CUDA graph captured from one of them may be replayed after this)."""
        if getattr(self, "_h", None) and self._h.value:
            for p in list(self._plan_cache.values()) + list(self._live_plans):
                p.close()
            self._plan_cache.clear()
            self._pinned_plans.clear()
            for w in list(self._live_weights):
                w.close()
            self._kernels.clear()
            _lib.nvfp4jit_ctx_destroy(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _check(self, st):
        if st:
            raise Error(st, _lib.nvfp4jit_last_error(self._h).decode(errors="replace"))

    @property
    def last_warning(self) -> str:
        return _lib.nvfp4jit_last_warning(self._h).decode(errors="replace")

    @property
    def cache_dir(self) -> str:
        return os.fsdecode(_lib.nvfp4jit_cache_dir(self._h))

    @property
    def tune_db_path(self) -> str:
        return os.fsdecode(_lib.nvfp4jit_tune_db_path(self._h))

    def compile(self, variant) -> "Kernel":
        v = _vparse(variant) if not isinstance(variant, _lib.Variant) else variant
        k = ctypes.c_void_p()
        self._check(_lib.nvfp4jit_compile(self._h, ctypes.byref(v), ctypes.byref(k)))
        ker = self._kernels.get(k.value)
        if ker is None:
            ker = self._kernels[k.value] = Kernel(self, k.value)
        return ker

    def device_arch(self) -> int:
        """Compute capability of the current (or first) device as major*10+minor (90)."""
        cc = ctypes.c_int()
        self._check(_lib.nvfp4jit_device_arch(self._h, ctypes.byref(cc)))
        return cc.value

    def _cmd_args(self):
        if not self.disk_cache:
            return ["--no-disk-cache"]
        return ["--cache-dir", self.cache_dir]


_tls = threading.local()


def default_context() -> Context:
    """This thread's context with the default options (created on first use)."""
    c = getattr(_tls, "ctx", None)
    if c is None:
        c = _tls.ctx = Context()
    return c


class Kernel:
    """A compiled variant (owned by its Context). Attributes: variant (the name), resources
    (a dict), source, ptx, log, cache_key, cache_path (str), cubin (bytes); sass() and mix()
    disassemble the cubin (need nvdisasm or cuobjdump)."""

    def __init__(self, ctx: Context, handle: int):
        self._ctx = ctx
        self._h = handle
        self.variant = _vformat(_lib.nvfp4jit_kernel_variant(handle).contents)

    def __repr__(self):
        return f"<nvfp4jit.Kernel {self.variant}>"

    def artifact(self, what: str):
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        st = _lib.nvfp4jit_kernel_artifact(self._h, _lib.ARTIFACT[what], ctypes.byref(data),
                                           ctypes.byref(size))
        if st:
            raise Error(st, f"artifact {what}")
        raw = ctypes.string_at(data, size.value) if size.value else b""
        if what == "cubin":
            return raw
        return raw.rstrip(b"\0").decode(errors="replace")

    source = property(lambda self: self.artifact("source"))
    ptx = property(lambda self: self.artifact("ptx"))
    cubin = property(lambda self: self.artifact("cubin"))
    log = property(lambda self: self.artifact("log"))
    cache_key = property(lambda self: self.artifact("cache_key"))
    cache_path = property(lambda self: self.artifact("cache_path"))

    @property
    def resources(self) -> dict:
        r = _lib.Resources()
        st = _lib.nvfp4jit_kernel_resources(self._h, ctypes.byref(r))
        if st:
            raise Error(st, "resources")
        return {name: getattr(r, name) for name, _ in r._fields_}

    def _inspect_cmd(self, flag):
        tool = tool_path()
        if not tool:
            raise Error(14, "the nvfp4jit command was not found (set NVFP4JIT_TOOL)")
        p = subprocess.run([tool, *self._ctx._cmd_args(), "inspect", "--variant", self.variant,
                            flag], capture_output=True, text=True)
        if p.returncode:
            raise Error(14 if "nvdisasm" in p.stderr or "cuobjdump" in p.stderr else 17,
                        p.stderr.strip())
        return p.stdout

    def sass(self) -> str:
        """The SASS (nvfp4jit inspect --sass: nvdisasm or cuobjdump from PATH, $CUDA_HOME/bin
        or /usr/local/cuda/bin; Error ERR_NOT_FOUND when there is neither)."""
        return self._inspect_cmd("--sass")

    def mix(self) -> str:
        """The instruction-mix summary of the SASS (nvfp4jit inspect --mix)."""
        return self._inspect_cmd("--mix")


# ---- module functions (no torch, no GPU) ------------------------------------------------------
def variants(arch="sm_90a") -> list:
    """The valid variant space of an arch, as names ("sm90a:128x128x64:s4:swap:act16")."""
    a = _arch(arch)
    n = ctypes.c_size_t()
    _lib.check(_lib.nvfp4jit_variant_space(a, None, 0, ctypes.byref(n)))
    arr = (_lib.Variant * n.value)()
    _lib.check(_lib.nvfp4jit_variant_space(a, arr, n.value, ctypes.byref(n)))
    return [_vformat(v) for v in arr]


def compile(variant, ctx: Context = None) -> Kernel:  # noqa: A001 (the API's name)
    """Render and compile a variant (or load it from the cache). @return a Kernel."""
    return (ctx or default_context()).compile(variant)


def inspect(variant, what="resources", ctx: Context = None):
    """One artifact of a variant: "source", "ptx", "log", "cache_key", "cache_path" (str),
    "cubin" (bytes), "resources" (dict), "sass" or "mix" (str, need nvdisasm/cuobjdump)."""
    k = compile(variant, ctx)
    if what == "resources":
        return k.resources
    if what == "sass":
        return k.sass()
    if what == "mix":
        return k.mix()
    if what not in _lib.ARTIFACT:
        raise Error(1, f"inspect: unknown artifact '{what}'")
    return k.artifact(what)


def _shapes_array(shapes):
    """[(M, N, K), ...] -> a ctypes Group array with null pointers."""
    shapes = [tuple(int(x) for x in s) for s in shapes]
    arr = (_lib.Group * len(shapes))()
    for g, s in zip(arr, shapes):
        if len(s) != 3:
            raise Error(1, f"shape {s}: expected (M, N, K)")
        g.m, g.n, g.k = s
    return arr


def check(shapes, ctx: Context = None):
    """Check problem shapes [(M, N, K), ...] against the data contract; raise Error
    (ERR_INVALID_PROBLEM, "group 3: K=100 is not a multiple of 64") if they break it."""
    ctx = ctx or default_context()
    arr = _shapes_array(shapes)
    ctx._check(_lib.nvfp4jit_problem_check_shapes(ctx._h, arr, len(arr)))


def choose(shapes, arch="sm_90a", variant=None, ctx: Context = None) -> tuple:
    """The variant a plan for these shapes would use, compiled into the cache (no GPU needed).
    @return (variant name, "heuristic" | "forced" | "tuned")."""
    ctx = ctx or default_context()
    arr = _shapes_array(shapes)
    force = ctypes.byref(_vparse(variant)) if variant else None
    p = ctypes.c_void_p()
    ctx._check(_lib.nvfp4jit_plan_create(ctx._h, _arch(arch), arr, len(arr), force,
                                         ctypes.byref(p)))
    try:
        ch = ctypes.c_int()
        v = _lib.nvfp4jit_plan_variant(p, ctypes.byref(ch))
        return _vformat(v.contents), _lib.CHOICE.get(ch.value, str(ch.value))
    finally:
        _lib.nvfp4jit_plan_destroy(p)


def explain(shapes, arch=None, top=10, ctx: Context = None) -> str:
    """The heuristic's candidates for shapes [(M, N, K), ...], their estimated costs and why
    the winner won: the report of `nvfp4jit explain` (arch None: the GPU's, else both)."""
    ctx = ctx or default_context()
    check(shapes, ctx)
    tool = tool_path()
    if not tool:
        raise Error(14, "the nvfp4jit command was not found (set NVFP4JIT_TOOL)")
    groups = ",".join("x".join(str(int(x)) for x in s) for s in shapes)
    args = [tool, *ctx._cmd_args(), "explain", "--groups", groups, "--top", str(int(top))]
    if arch is not None:
        args += ["--arch", _arch_name(_arch(arch))]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        raise Error(1 if p.returncode == 2 else 17, p.stderr.strip())
    return p.stdout


def scale_bytes(rows: int, k: int) -> int:
    """Bytes of one operand's scales in the blocked layout (rows padded to 128, K/16 columns
    padded to 4)."""
    return int(_lib.nvfp4jit_scale_bytes(int(rows), int(k)))


def moe_scale_rows(max_rows: int, num_experts: int) -> int:
    """Rows of the token-scale buffer of a MoE call: round_up(max_rows + 127 E, 128) (every
    expert's scales start at a multiple of 128 rows)."""
    return int(_lib.nvfp4jit_moe_scale_rows(int(max_rows), int(num_experts)))


def cache_dir(ctx: Context = None) -> str:
    """The cache directory in use ($NVFP4JIT_CACHE_DIR, $XDG_CACHE_HOME/nvfp4jit or
    ~/.cache/nvfp4jit unless the Context says otherwise)."""
    return (ctx or default_context()).cache_dir


# ---- torch layer, imported on first use ---------------------------------------------------------
_TORCH_NAMES = ("grouped_gemm", "Plan", "tune", "Weights", "MoEPlan")


def __getattr__(name):
    if name in _TORCH_NAMES:
        from . import _torch
        return getattr(_torch, name)
    if name in ("gpumode", "testing"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'nvfp4jit' has no attribute '{name}'")
