"""The C library (python/capi/vpipe_capi.h) through ctypes, and its errors."""
import ctypes
import decimal
import json
import math
import numbers
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_int64, c_uint64,
                    c_void_p)


class VpipeError(RuntimeError):
    """A vpipe run failed; the message is vpipe's."""


class InputError(VpipeError, ValueError):
    """Bad input or options: a missing file, an unknown filter, a wrong tensor."""


class Interrupted(VpipeError):
    """The run was stopped (Ctrl-C); what was written is finalized."""


class Closing:
    """close() by `with`, and by garbage collection (errors at interpreter exit ignored)."""

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class FrameInfo(Structure):
    _fields_ = [("width", c_int), ("height", c_int), ("num_planes", c_int), ("on_device", c_int),
                ("device_id", c_int), ("pix_fmt", c_char * 32), ("pts", c_int64), ("index", c_int64),
                ("time_base_num", c_int), ("time_base_den", c_int), ("plane_data", c_uint64 * 4),
                ("plane_width", c_int * 4), ("plane_height", c_int * 4), ("plane_channels", c_int * 4),
                ("plane_pitch", c_int64 * 4), ("sample_bytes", c_int)]


FILTER_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_uint64)


def _load():
    path = os.environ.get("VPIPE_CAPI") or os.path.join(os.path.dirname(__file__), "_vpipe_capi.so")
    # RTLD_GLOBAL: filter plugins loaded later resolve vpipe's symbols from it.
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    sig = {
        "vpipe_last_error": (c_char_p, []),
        "vpipe_last_error_kind": (c_int, []),
        "vpipe_version": (c_char_p, []),
        "vpipe_set_verbose": (None, [c_int]),
        "vpipe_frame_get_info": (None, [c_void_p, POINTER(FrameInfo)]),
        "vpipe_frame_dlpack": (c_void_p, [c_void_p, c_int, c_int, c_uint64]),
        "vpipe_frame_release": (None, [c_void_p]),
        "vpipe_decoder_open": (c_void_p, [c_char_p]),
        "vpipe_decoder_next": (c_int, [c_void_p, c_int, POINTER(c_void_p)]),
        "vpipe_decoder_report": (c_char_p, [c_void_p]),
        "vpipe_decoder_close": (None, [c_void_p]),
        "vpipe_encoder_open": (c_void_p, [c_char_p]),
        "vpipe_encoder_write_dlpack": (c_int, [c_void_p, c_void_p, c_char_p, c_int, c_int64]),
        "vpipe_encoder_write_frame": (c_int, [c_void_p, c_void_p, c_int, c_int64]),
        "vpipe_encoder_close": (c_int, [c_void_p]),
        "vpipe_encoder_stats": (c_char_p, [c_void_p]),
        "vpipe_encoder_free": (None, [c_void_p]),
        "vpipe_filter_register": (c_int, [FILTER_FN, c_void_p]),
        "vpipe_filter_unregister": (None, [c_int]),
        "vpipe_transcode_open": (c_void_p, [c_char_p]),
        "vpipe_transcode_run": (c_int, [c_void_p]),
        "vpipe_transcode_interrupt": (None, [c_void_p]),
        "vpipe_transcode_report": (c_char_p, [c_void_p]),
        "vpipe_transcode_free": (None, [c_void_p]),
        "vpipe_load_plugin": (c_int, [c_char_p]),
        "vpipe_filter_names": (c_char_p, []),
        "vpipe_strategy_names": (c_char_p, []),
        "vpipe_keyframes": (c_char_p, [c_char_p]),
        "vpipe_join": (c_char_p, [c_char_p]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


lib = _load()
lib.vpipe_set_verbose(int(os.environ.get("VPIPE_VERBOSE", "0") or 0))
CAPSULE_DESTRUCTOR = ctypes.cast(lib.vpipe_dlpack_capsule_destructor, c_void_p)

_py = ctypes.pythonapi
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
_py.PyCapsule_GetPointer.restype = c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_py.PyCapsule_SetName.restype = c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]


def error(kind=None, message=None):
    """The exception for this thread's last C error."""
    kind = lib.vpipe_last_error_kind() if kind is None else kind
    message = lib.vpipe_last_error().decode() if message is None else message
    cls = {1: InputError, 2: Interrupted}.get(kind, VpipeError)
    return cls(message)


def _value(key, v):
    """An option's value as vpipe's parser reads it: a number's plain decimal text (JSON would
    write 1e-05, which no time or size is written as), a Fraction or Decimal as a number, and
    nan or inf refused by name."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or isinstance(v, int):
        return v
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{key}={v}: not a finite number")
    text = repr(v)
    return format(decimal.Decimal(text), "f") if "e" in text or "E" in text else v


def options(**kw):
    """JSON text of the options that are set (None: the library's default)."""
    return json.dumps({k: _value(k, v) for k, v in kw.items() if v is not None}).encode()


def capsule(tensor_ptr):
    """A "dltensor" PyCapsule owning a DLManagedTensor* from the library."""
    return _py.PyCapsule_New(tensor_ptr, b"dltensor", CAPSULE_DESTRUCTOR)


def take_capsule(cap):
    """The DLManagedTensor* of a producer's capsule, marked consumed."""
    ptr = _py.PyCapsule_GetPointer(cap, b"dltensor")
    _py.PyCapsule_SetName(cap, b"used_dltensor")
    return ptr
