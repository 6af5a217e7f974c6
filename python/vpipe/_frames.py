"""Frames: vpipe's decoded pictures, shared with PyTorch, CuPy and NumPy
without a copy (DLPack, and the CUDA / NumPy array interfaces)."""
import ctypes
from fractions import Fraction

from . import _lib
from ._lib import lib

_KDL_CPU, _KDL_CUDA = 1, 2


def _sync_args(stream):
    """DLPack's stream argument → the C API's (sync, stream)."""
    if stream is None or stream == 0:
        return 1, 0   # no stream named: the host waits until the frame is ready
    if stream == -1:
        return 0, 0   # the consumer synchronizes itself
    return 2, int(stream)  # that stream waits (no host blocking)


class _View:
    """What a Frame and a Plane share: the array protocols over one plane view."""

    def _owner(self):
        raise NotImplementedError

    def _geometry(self):
        raise NotImplementedError

    def _export(self, stream):
        raise NotImplementedError

    @property
    def shape(self):
        return self._geometry()[1]

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("vpipe frames are shared, never copied by __dlpack__ (copy=True)")
        return self._export(stream)

    def __dlpack_device__(self):
        info = self._owner()._info()
        return (_KDL_CUDA, info.device_id) if info.on_device else (_KDL_CPU, 0)

    def _interface(self, device):
        info = self._owner()._info()
        if bool(info.on_device) != device:
            raise AttributeError("the frame is in {} memory".format("device" if info.on_device else "host"))
        data, shape, strides = self._geometry()
        sb = info.sample_bytes or 1  # 16-bit samples (P010, yuv420p10le): little-endian uint16
        d = {"shape": shape, "typestr": "<u2" if sb == 2 else "|u1", "data": (data, False),
             "strides": strides, "version": 3}
        if device:
            d["stream"] = self._owner()._stream or None
        return d

    @property
    def __array_interface__(self):
        return self._interface(False)

    @property
    def __cuda_array_interface__(self):
        return self._interface(True)


def _shape(width, height, channels, pitch, sample_bytes=1):
    """A plane's shape in samples and its strides in bytes (the array interface's);
    `channels` counts bytes."""
    sb = sample_bytes or 1
    ch = channels // sb
    if ch == 1:
        return (height, width), (pitch, sb)
    return (height, width, ch), (pitch, channels, sb)


class Plane(_View):
    """One plane of a frame (NV12: Y is H×W, UV is H/2×W/2×2)."""

    def __init__(self, frame, index):
        self._frame, self._index = frame, index

    def _owner(self):
        return self._frame

    def _geometry(self):
        i, k = self._frame._info(), self._index
        shape, strides = _shape(i.plane_width[k], i.plane_height[k], i.plane_channels[k],
                                i.plane_pitch[k], i.sample_bytes)
        return i.plane_data[k], shape, strides

    def _export(self, stream):
        return self._frame._dlpack(self._index, stream)


class Frame(_lib.Closing, _View):
    """A decoded picture. `torch.from_dlpack(frame)` (or cupy / numpy) aliases
    its memory: a one-plane frame (rgb24: H×W×3, gray: H×W) or NV12 / P010 kept
    in one block (H*3/2×W); other layouts through `frame.planes`. Samples deeper
    than 8 bits (P010, yuv420p10le) are uint16, as the format stores them (P010:
    the 10 bits at the top of each word; yuv420p10le: at the bottom). The memory goes
    back to vpipe's strategy when the frame and every tensor made from it are
    gone. `close()` lets go of the frame early (tensors keep what they need)."""

    def __init__(self, handle, owned=True, stream=0):
        self._h, self._owned, self._stream = handle, owned, stream
        self._cached = None

    def _owner(self):
        return self

    def _info(self):
        if self._h is None:
            raise ValueError("the frame is closed")
        if self._cached is None:
            info = _lib.FrameInfo()
            lib.vpipe_frame_get_info(self._h, ctypes.byref(info))
            self._cached = info
        return self._cached

    def _dlpack(self, plane, stream):
        if self._h is None:
            raise ValueError("the frame is closed")
        sync, s = _sync_args(stream)
        ptr = lib.vpipe_frame_dlpack(self._h, plane, sync, s)
        if not ptr:
            raise _lib.error()
        return _lib.capsule(ptr)

    def _export(self, stream):
        return self._dlpack(-1, stream)

    def _geometry(self):
        i = self._info()
        if i.num_planes == 1:
            return Plane(self, 0)._geometry()
        uv = i.plane_data[0] + i.plane_pitch[0] * i.plane_height[0]
        if (i.pix_fmt in (b"nv12", b"p010le") and i.plane_pitch[1] == i.plane_pitch[0]
                and i.plane_data[1] == uv):  # Y and UV in one block: (H*3/2)×W samples
            rows = i.plane_height[0] + i.plane_height[1]
            return i.plane_data[0], (rows, i.plane_width[0]), (i.plane_pitch[0], i.sample_bytes or 1)
        raise AttributeError(f"a {self.format} frame has {i.num_planes} planes in separate blocks: "
                             "use frame.planes[i], or convert in the chain (filters='format=rgb24')")

    @property
    def width(self):
        return self._info().width

    @property
    def height(self):
        return self._info().height

    @property
    def format(self):
        """FFmpeg's pixel format name: "nv12", "yuv420p", "rgb24"…"""
        return self._info().pix_fmt.decode()

    @property
    def pts(self):
        return self._info().pts

    @property
    def time_base(self):
        i = self._info()
        return Fraction(i.time_base_num, i.time_base_den) if i.time_base_den else None

    @property
    def time(self):
        """Presentation time in seconds (pts × time_base)."""
        tb = self.time_base
        return float(self.pts * tb) if tb is not None else None

    @property
    def index(self):
        """Decode order, from 0."""
        return self._info().index

    @property
    def device(self):
        """"cuda" or "cpu": where the planes are."""
        return "cuda" if self._info().on_device else "cpu"

    @property
    def data_ptr(self):
        """The address of the first plane (for checking that tensors alias it)."""
        return self._info().plane_data[0]

    @property
    def planes(self):
        return [Plane(self, k) for k in range(self._info().num_planes)]

    def close(self):
        if self._h is not None and self._owned:
            lib.vpipe_frame_release(self._h)
        self._h = None

    def __repr__(self):
        if self._h is None:
            return "<vpipe.Frame closed>"
        return f"<vpipe.Frame {self.width}x{self.height} {self.format} pts={self.pts} on {self.device}>"
