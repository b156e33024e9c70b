"""ctypes binding of include/nvfp4jit.h: finding and loading libnvfp4jit, the C structs, the
status codes and nvfp4jit.Error. Nothing here needs torch or a GPU."""
from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["Error", "lib", "library_path", "tool_path", "STATUS", "check"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """Where libnvfp4jit is looked for, in order: $NVFP4JIT_LIBRARY; the copy in this package
    (a wheel); the build tree of a source checkout (python/nvfp4jit -> ../../build or
    $NVFP4JIT_BUILD_DIR); the loader's search (an installed prefix)."""
    env = os.environ.get("NVFP4JIT_LIBRARY")
    if env:
        yield env
        return
    yield os.path.join(_HERE, "libnvfp4jit.so.0")
    root = os.path.dirname(os.path.dirname(_HERE))
    build = os.environ.get("NVFP4JIT_BUILD_DIR", "build")
    yield os.path.join(root, build, "libnvfp4jit.so")
    import glob  # a copy of the build tree that lost its symlinks: the versioned file
    yield from sorted(glob.glob(os.path.join(root, build, "libnvfp4jit.so.*")))
    found = ctypes.util.find_library("nvfp4jit")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (missing)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "nvfp4jit: cannot load libnvfp4jit; set NVFP4JIT_LIBRARY to the path of "
        "libnvfp4jit.so (e.g. build/libnvfp4jit.so). Tried: " + "; ".join(tried or ["nothing"]))


lib, library_path = _load()


def tool_path():
    """The nvfp4jit command (used by explain() and the SASS/mix of inspect()): $NVFP4JIT_TOOL,
    else next to the library (wheel, build tree) or in ../bin (installed prefix), else PATH.
    @return the path, or None."""
    import shutil
    env = os.environ.get("NVFP4JIT_TOOL")
    if env:
        return env
    d = os.path.dirname(os.path.realpath(library_path)) if os.sep in library_path else ""
    for p in (os.path.join(d, "nvfp4jit"), os.path.join(d, "..", "bin", "nvfp4jit")):
        if d and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return shutil.which("nvfp4jit")


# ---- structs (field for field as in nvfp4jit.h) --------------------------------------------
c_int, c_double, c_size_t, c_char_p, c_void_p = (ctypes.c_int, ctypes.c_double, ctypes.c_size_t,
                                                 ctypes.c_char_p, ctypes.c_void_p)


class CtxOptions(ctypes.Structure):
    _fields_ = [("cache_dir", c_char_p), ("disable_disk_cache", c_int), ("verbose", c_int)]


class Variant(ctypes.Structure):
    _fields_ = [("arch", c_int), ("block_m", c_int), ("block_n", c_int), ("block_k", c_int),
                ("stages", c_int), ("swap_ab", c_int), ("strategy", c_int)]


class Resources(ctypes.Structure):
    _fields_ = [("registers", c_int), ("shared_static_bytes", c_int),
                ("shared_dynamic_bytes", c_int), ("spill_store_bytes", c_int),
                ("spill_load_bytes", c_int), ("local_bytes", c_int), ("threads", c_int),
                ("compile_ms", c_double), ("from_cache", c_int),
                # appended in 0.1.0 (issue 10): must match nvfp4jit_resources field for field
                ("render_ms", c_double), ("nvrtc_ms", c_double), ("link_ms", c_double),
                # appended after link_ms: an nvfp4jit_cache_state (0 none, 1 stored,
                # 2 read-only directory, 3 store failed)
                ("cache_state", c_int)]


class Group(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("a", ctypes.c_uint64), ("b", ctypes.c_uint64), ("sfa", ctypes.c_uint64),
                ("sfb", ctypes.c_uint64), ("c", ctypes.c_uint64)]


class TuneResult(ctypes.Structure):
    _fields_ = [("variant", Variant), ("heuristic_rank", c_int), ("est_us", c_double),
                ("median_us", c_double), ("min_us", c_double), ("status", c_int),
                ("winner", c_int)]


class TuneOptions(ctypes.Structure):
    _fields_ = [("candidates", c_int), ("time_limit_s", c_double), ("iters", c_int),
                ("warmup", c_int), ("jobs", c_int), ("progress", c_int), ("verbose", c_int),
                ("no_store", c_int), ("results", ctypes.POINTER(TuneResult)),
                ("results_cap", c_size_t), ("results_count", ctypes.POINTER(c_size_t))]


class WeightsDesc(ctypes.Structure):
    _fields_ = [("num_experts", c_int), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("b", ctypes.c_uint64), ("sfb", ctypes.c_uint64),
                ("b_experts", ctypes.POINTER(ctypes.c_uint64)),
                ("sfb_experts", ctypes.POINTER(ctypes.c_uint64))]


class MoeInfo(ctypes.Structure):
    _fields_ = [("variant", Variant), ("choice", c_int), ("device_bytes", c_size_t),
                ("setup_ms", c_double), ("grid", ctypes.c_uint), ("prep_grid", ctypes.c_uint),
                ("sms", c_int)]


class MoeCall(ctypes.Structure):
    _fields_ = [("a", ctypes.c_uint64), ("sfa", ctypes.c_uint64), ("c", ctypes.c_uint64),
                ("offsets", ctypes.c_uint64), ("sf_offsets", ctypes.c_uint64)]


ARCH_SM90A, ARCH_SM100A = 90, 100
ARTIFACT = {"source": 0, "ptx": 1, "cubin": 2, "log": 3, "cache_key": 4, "cache_path": 5}
CHOICE = {0: "heuristic", 1: "forced", 2: "tuned"}

# ---- functions ------------------------------------------------------------------------------
P = ctypes.POINTER
_ctx_p = c_void_p


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


nvfp4jit_version_number = _fn("nvfp4jit_version_number", c_int)
nvfp4jit_version_string = _fn("nvfp4jit_version_string", c_char_p)
nvfp4jit_status_string = _fn("nvfp4jit_status_string", c_char_p, c_int)
nvfp4jit_ctx_create = _fn("nvfp4jit_ctx_create", c_int, P(CtxOptions), P(c_void_p))
nvfp4jit_ctx_destroy = _fn("nvfp4jit_ctx_destroy", None, _ctx_p)
nvfp4jit_last_error = _fn("nvfp4jit_last_error", c_char_p, _ctx_p)
nvfp4jit_last_warning = _fn("nvfp4jit_last_warning", c_char_p, _ctx_p)
nvfp4jit_cache_dir = _fn("nvfp4jit_cache_dir", c_char_p, _ctx_p)
nvfp4jit_variant_check = _fn("nvfp4jit_variant_check", c_int, _ctx_p, P(Variant))
nvfp4jit_variant_format = _fn("nvfp4jit_variant_format", c_int, P(Variant), c_char_p, c_size_t)
nvfp4jit_variant_parse = _fn("nvfp4jit_variant_parse", c_int, c_char_p, P(Variant))
nvfp4jit_variant_space = _fn("nvfp4jit_variant_space", c_int, c_int, P(Variant), c_size_t,
                             P(c_size_t))
nvfp4jit_compile = _fn("nvfp4jit_compile", c_int, _ctx_p, P(Variant), P(c_void_p))
nvfp4jit_kernel_artifact = _fn("nvfp4jit_kernel_artifact", c_int, c_void_p, c_int, P(c_void_p),
                               P(c_size_t))
nvfp4jit_kernel_resources = _fn("nvfp4jit_kernel_resources", c_int, c_void_p, P(Resources))
nvfp4jit_kernel_variant = _fn("nvfp4jit_kernel_variant", P(Variant), c_void_p)
# groups are passed as c_void_p: the hot path hands over an array('q') buffer directly
nvfp4jit_problem_check = _fn("nvfp4jit_problem_check", c_int, _ctx_p, c_void_p, c_size_t)
nvfp4jit_problem_check_shapes = _fn("nvfp4jit_problem_check_shapes", c_int, _ctx_p, c_void_p,
                                    c_size_t)
nvfp4jit_plan_create = _fn("nvfp4jit_plan_create", c_int, _ctx_p, c_int, c_void_p, c_size_t,
                           P(Variant), P(c_void_p))
nvfp4jit_plan_destroy = _fn("nvfp4jit_plan_destroy", None, c_void_p)
nvfp4jit_plan_variant = _fn("nvfp4jit_plan_variant", P(Variant), c_void_p, P(c_int))
nvfp4jit_plan_kernel = _fn("nvfp4jit_plan_kernel", c_void_p, c_void_p)
nvfp4jit_plan_sms = _fn("nvfp4jit_plan_sms", c_int, c_void_p)
nvfp4jit_plan_run = _fn("nvfp4jit_plan_run", c_int, c_void_p, c_void_p, c_size_t, c_void_p)
nvfp4jit_tune = _fn("nvfp4jit_tune", c_int, _ctx_p, c_int, c_void_p, c_size_t, P(TuneOptions),
                    P(Variant), P(c_double))
nvfp4jit_tune_db_path = _fn("nvfp4jit_tune_db_path", c_char_p, _ctx_p)
nvfp4jit_device_arch = _fn("nvfp4jit_device_arch", c_int, _ctx_p, P(c_int))
nvfp4jit_reference_run = _fn("nvfp4jit_reference_run", c_int, _ctx_p, c_void_p, c_size_t,
                             c_void_p)

# MoE layers (issue 12); absent from libraries older than the MoE API
if hasattr(lib, "nvfp4jit_moe_run"):
    nvfp4jit_scale_bytes = _fn("nvfp4jit_scale_bytes", c_size_t, ctypes.c_int64, ctypes.c_int64)
    nvfp4jit_moe_scale_rows = _fn("nvfp4jit_moe_scale_rows", ctypes.c_int64, ctypes.c_int64,
                                  c_int)
    nvfp4jit_weights_create = _fn("nvfp4jit_weights_create", c_int, _ctx_p, c_int,
                                  P(WeightsDesc), P(c_void_p))
    nvfp4jit_weights_destroy = _fn("nvfp4jit_weights_destroy", None, c_void_p)
    nvfp4jit_moe_plan_create = _fn("nvfp4jit_moe_plan_create", c_int, c_void_p, ctypes.c_int64,
                                   P(Variant), P(c_void_p))
    nvfp4jit_moe_plan_destroy = _fn("nvfp4jit_moe_plan_destroy", None, c_void_p)
    nvfp4jit_moe_plan_info = _fn("nvfp4jit_moe_plan_info", c_int, c_void_p, P(MoeInfo))
    nvfp4jit_moe_run = _fn("nvfp4jit_moe_run", c_int, c_void_p, P(MoeCall), c_void_p)
    nvfp4jit_moe_plan_check = _fn("nvfp4jit_moe_plan_check", c_int, c_void_p, P(c_int))

# ---- status and errors ----------------------------------------------------------------------
STATUS = {}  # value -> name ("ERR_COMPILE"), read from the library's own strings
for _v in range(0, 64):
    _s = nvfp4jit_status_string(_v).decode()
    if _s.startswith("NVFP4JIT_?"):
        continue
    STATUS[_v] = _s.split(":", 1)[0][len("NVFP4JIT_"):]


class Error(RuntimeError):
    """A failed library call. status: the nvfp4jit_status value (int); name: its name
    ("ERR_INVALID_PROBLEM"); message: the library's detail ("group 3: K=100 is not a multiple
    of 64")."""

    def __init__(self, status, message=""):
        self.status = int(status)
        self.name = STATUS.get(self.status, f"status {self.status}")
        self.message = message
        desc = nvfp4jit_status_string(self.status).decode()
        super().__init__(f"{desc}: {message}" if message else desc)


def check(status, ctx_handle=None):
    """Raise Error(status, last_error(ctx)) unless status is NVFP4JIT_OK."""
    if status:
        raise Error(status, nvfp4jit_last_error(ctx_handle).decode(errors="replace"))
