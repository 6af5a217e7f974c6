"""decode, decode_many, Encoder, transcode: vpipe's pipelines from Python."""
import contextlib
import ctypes
import json
import os
import sys
import threading
from fractions import Fraction

from . import _lib
from ._frames import Frame
from ._lib import lib

_POLL_MS = 100  # a blocking call returns this often, so Ctrl-C is heard


def _path(p):
    """A str, bytes or os.PathLike file name (or a URL), as vpipe's C API takes it:
    str(b"out.mp4") would have been the name "b'out.mp4'"."""
    return os.fsdecode(p)


def _dlpack_capsule(image):
    """image.__dlpack__(), or that of a copy when the producer cannot export
    it: DLPack before 1.0 cannot say "read-only", so numpy refuses to export a
    read-only array (np.from_dlpack's, a broadcast) with a BufferError. The
    encoder only reads it, and copies it anyway."""
    try:
        return image.__dlpack__(stream=None)  # the producer's work is done before the copy
    except BufferError:
        if not hasattr(image, "copy"):
            raise
        return image.copy().__dlpack__(stream=None)


class Decoder(_lib.Closing):
    """Frames of one input, in presentation order (see decode())."""

    def __init__(self, source, **kw):
        self._h = lib.vpipe_decoder_open(_lib.options(input=_path(source), **kw))
        if not self._h:
            raise _lib.error()
        self.report = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._h is None:
            raise StopIteration
        handle = ctypes.c_void_p()
        while True:
            rc = lib.vpipe_decoder_next(self._h, _POLL_MS, ctypes.byref(handle))
            if rc == 1:
                return Frame(handle.value)
            if rc == 2:
                continue  # nothing yet; Python may raise KeyboardInterrupt here
            err = _lib.error() if rc == -1 else None
            self.report = json.loads(lib.vpipe_decoder_report(self._h) or b"null")
            self.close()
            if err is not None:
                raise err
            raise StopIteration

    def close(self):
        """Stops decoding; frames already taken stay valid."""
        if self._h is not None:
            lib.vpipe_decoder_close(self._h)
            self._h = None



def decode(source, *, device="auto", decoder="auto", mem="pool", filters="", max_frames=None,
           budget=None, prefetch=4, loop=None, queue_depth=None, decode_sessions=None,
           ss=None, to=None, duration=None):
    """Decodes `source` (a file or a live URL) and yields vpipe.Frame objects.

    device="cuda" keeps frames on the GPU, in memory from the `mem` strategy
    (vpipe.strategies(): NVDEC's frames are copied into it as they
    come), after CUDA `filters` such as "resize=1280x720,format=rgb24".
    device="cpu" gives host frames. Up to `prefetch` decoded frames wait for
    you; the decoder pauses beyond that. A frame you hold keeps its memory:
    `.clone()` the tensors you keep and let the frames go. decode_sessions=N
    decodes segments (GOPs) of the one input with N sessions at once (as
    `vpipe transcode --decode-sessions`). ss, to and duration cut the input
    frame-exactly, as `vpipe transcode --ss/--to/--duration` do: seconds, or
    "HH:MM:SS.mmm" text, e.g. decode(path, ss=90, duration=2.5).
    Errors are vpipe.InputError / vpipe.VpipeError with vpipe's message.
    """
    return Decoder(source, device=device, decode=decoder, mem=mem, filters=filters,
                   max_frames=max_frames, budget=budget, prefetch=prefetch, loop=loop,
                   queue_depth=queue_depth, decode_sessions=decode_sessions, ss=ss, to=to,
                   duration=duration)


def decode_many(sources, *, batch=None, **kw):
    """Decodes several inputs at once and yields lists of `batch` frames
    (default: one per input), taken from the inputs in turn; an input that
    ends drops out, and the last list may be shorter."""
    decoders = [decode(s, **kw) for s in sources]
    batch = batch or len(decoders)
    live = list(decoders)
    try:
        group = []
        while live:
            for d in list(live):
                try:
                    group.append(next(d))
                except StopIteration:
                    live.remove(d)
                    continue
                if len(group) == batch:
                    yield group
                    group = []
        if group:
            yield group
    finally:
        for d in decoders:
            d.close()


def _rational(value):
    if value is None:
        return None
    if isinstance(value, tuple):
        return list(value)
    f = Fraction(value).limit_denominator(1001000)
    return [f.numerator, f.denominator]


class Encoder(_lib.Closing):
    """Writes frames and tensors to a video file (libx264 by default, as
    `vpipe transcode`). write() takes a vpipe.Frame or any DLPack tensor of
    uint8 pixels, on the GPU or the host: H×W (gray), H×W×3 (RGB), H×W×4
    (RGBA), or format="nv12" for an (H*3/2)×W block. pts counts in
    `time_base` (default 1/fps); omitted, frames follow each other. The file
    is finalized by close(), `with`, or garbage collection, so an exception in
    your loop still leaves a playable file. `audio_from` copies that file's
    audio."""

    def __init__(self, path, *, codec="auto", fps=30, time_base=None, crf=None, preset=None,
                 qscale=None, audio_from=None):
        self.path = _path(path)
        self._h = lib.vpipe_encoder_open(_lib.options(
            path=self.path, encoder=codec, fps=_rational(fps), time_base=_rational(time_base), crf=crf,
            preset=preset, qscale=qscale, audio_from=None if audio_from is None else _path(audio_from)))
        if not self._h:
            raise _lib.error()

    def write(self, image, pts=None, format=None):
        if self._h is None:
            raise ValueError(f"{self.path}: the encoder is closed")
        has_pts, t = (0, 0) if pts is None else (1, int(pts))
        if isinstance(image, Frame):
            rc = lib.vpipe_encoder_write_frame(self._h, image._h, has_pts, t)
        else:
            if not hasattr(image, "__dlpack__"):
                raise TypeError(f"{type(image).__name__}: expected a vpipe.Frame or a DLPack tensor")
            ptr = _lib.take_capsule(_dlpack_capsule(image))
            rc = lib.vpipe_encoder_write_dlpack(self._h, ptr, None if format is None else format.encode(),
                                                has_pts, t)
        if rc != 0:
            raise _lib.error()

    @property
    def stats(self):
        """frames, packets, audio_packets, device_to_host_bytes, encoder."""
        return json.loads(lib.vpipe_encoder_stats(self._h))

    def close(self):
        if self._h is None:
            return
        rc = lib.vpipe_encoder_close(self._h)
        err = _lib.error() if rc != 0 else None
        self.final_stats = self.stats
        lib.vpipe_encoder_free(self._h)
        self._h = None
        if err is not None:
            raise err



def _array_module(array, device):
    if array != "auto":
        return __import__(array)
    if device == "cpu":
        return __import__("numpy")
    for name in ("torch", "cupy"):
        if name in sys.modules or _importable(name):
            return __import__(name)
    raise _lib.InputError("py_filter on the GPU needs torch or cupy (array='torch' or 'cupy')")


def _import_array_modules(array, device):
    """Imports, on the caller's thread, the modules the filter's calls will use.
    The calls run on the pipeline's thread, and torch imported there for the first
    time hangs in its CUDA set-up (torch.cuda.current_device, seen on the H200 with
    torch 2.11): so nothing is imported there for the first time."""
    __import__("numpy")  # the CPU path's arrays, and torch's and cupy's own import of it
    try:
        _array_module(array, device)  # the one module the filter's calls will use
    except _lib.InputError:
        pass  # neither torch nor cupy: the first frame says so, on the pipeline's thread


def _importable(name):
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _on_stream(mod, stream):
    """The pipeline's CUDA stream as the array library's current stream."""
    if not stream:
        return contextlib.nullcontext()
    if mod.__name__ == "torch":
        return mod.cuda.stream(mod.cuda.ExternalStream(stream))
    if mod.__name__ == "cupy":
        return mod.cuda.ExternalStream(stream)
    return contextlib.nullcontext()


def _store(mod, dst, value):
    """Writes `value` into frame `dst` (the filter's output)."""
    if mod.__name__ == "numpy":
        mod.copyto(mod.asarray(dst), value)
    elif mod.__name__ == "torch":
        mod.from_dlpack(dst).copy_(value)
    else:
        mod.from_dlpack(dst)[...] = value


def _filter_trampoline(fn, array, errors):
    def call(_user, fin, fout, stream):
        src = Frame(fin, owned=False, stream=stream)
        dst = Frame(fout, owned=False, stream=stream)
        try:
            mod = _array_module(array, src.device)
            with _on_stream(mod, stream):
                x = mod.from_dlpack(src)
                y = fn(x)
                _store(mod, dst, x if y is None else y)
            return 0
        except BaseException as e:  # noqa: B036 - carried to the caller's thread
            errors.append(e)
            return 1
        finally:
            src._h = dst._h = None  # borrowed for the call only
    return _lib.FILTER_FN(call)


def transcode(input, output, *, vf="", py_filter=None, py_format="rgb24", array="auto", device="auto",
              decoder="auto", mem="pool", encoder=None, crf=None, preset=None, qscale=None,
              max_frames=None, budget=None, queue_depth=None, loop=None, **options):
    """`vpipe transcode` from Python; returns its report (a dict).

    py_filter=fn runs fn(tensor) -> tensor on every frame after `vf`, on the
    pipeline's thread and CUDA stream (torch/cupy tensors on the GPU path,
    numpy on the CPU path; `array` picks). The tensor is H×W×3 RGB
    (py_format="rgb24"; "nv12", "gray"… also work); return a tensor of the
    same shape, or None after changing it in place. Tensors are valid during
    the call: clone what you keep. Ctrl-C stops the run and finalizes the
    output (vpipe.Interrupted). Any other transcode option goes by its name in
    vpipe's option table (`vpipe run`'s config keys): gop=30,
    encode_segments=4, decode_sessions="auto", graphs="on"; an unknown name is
    an error that lists the known ones."""
    errors, slot, keep = [], 0, None
    filters = vf
    if py_filter is not None:
        _import_array_modules(array, device)
        keep = _filter_trampoline(py_filter, array, errors)
        slot = lib.vpipe_filter_register(keep, None)
        steps = [s for s in (vf, f"format={py_format}" if py_format else "", f"python=slot={slot}") if s]
        filters = ",".join(steps)
    try:
        return _run_job(_lib.options(input=_path(input), output=_path(output), filters=filters, device=device,
                                     decode=decoder, mem=mem, encoder=encoder, crf=crf, preset=preset,
                                     qscale=qscale, max_frames=max_frames, budget=budget,
                                     queue_depth=queue_depth, loop=loop, **options), errors)
    finally:
        if slot:
            lib.vpipe_filter_unregister(slot)
        del keep


class _Terminated(BaseException):
    """SIGTERM or SIGHUP during a run: it ends as Ctrl-C does (the output drained and finalized,
    no temporary file left), then the signal is delivered again with its default action."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _finish_on_termination():
    """On the main thread, where SIGTERM and SIGHUP would kill Python at once (their default):
    they raise _Terminated for the run's loop instead, for as long as the run goes on."""
    import signal
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            kept[signum] = signal.signal(signum, lambda n, _f: (_ for _ in ()).throw(_Terminated(n)))
    try:
        yield
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)


def _run_job(options, errors):
    with _finish_on_termination():
        terminated = None
        try:
            return _run_job_unguarded(options, errors)
        except _Terminated as e:
            terminated = e.signum
    os.kill(os.getpid(), terminated)  # the handler is the default again: the process ends


def _run_job_unguarded(options, errors):
    job = lib.vpipe_transcode_open(options)
    if not job:
        raise _lib.error()
    outcome, done = {}, threading.Event()

    def run():
        try:
            rc = lib.vpipe_transcode_run(job)
            outcome["error"] = _lib.error() if rc != 0 else None
        finally:
            done.set()

    # The job is freed only once run() has returned: Event.wait, not
    # Thread.join, which a KeyboardInterrupt can leave believing the thread ended.
    threading.Thread(target=run, name="vpipe-transcode", daemon=True).start()
    interrupted = None
    while not done.is_set():
        try:
            done.wait(_POLL_MS / 1000)
        except (KeyboardInterrupt, _Terminated) as e:
            lib.vpipe_transcode_interrupt(job)  # drains, finalizes the output
            interrupted = interrupted or e
    try:
        if interrupted is not None:
            raise interrupted
        report = json.loads(lib.vpipe_transcode_report(job) or b"null")
        if errors:
            raise errors[0]
        if outcome["error"] is not None:
            outcome["error"].report = report
            raise outcome["error"]
        return report
    finally:
        lib.vpipe_transcode_free(job)


def set_verbose(on=True):
    """FFmpeg's warnings and vpipe's debug log on stderr (VPIPE_VERBOSE=1 at import)."""
    lib.vpipe_set_verbose(1 if on else 0)


def strategies(compared=False):
    """The memory strategies `mem` takes (vpipe's strategy table); compared=True: those the
    benches and soak compare (all but pool-release0)."""
    return json.loads(lib.vpipe_strategy_names())["compared" if compared else "all"]


def filters():
    """The filter names usable in `vf` / `filters`."""
    return json.loads(lib.vpipe_filter_names())


def load_plugin(path):
    """Loads a C++ filter plugin (see examples/vignette)."""
    if lib.vpipe_load_plugin(_path(path).encode()) != 0:
        raise _lib.error()
