"""vpipe: real-time video pipelines on the GPU, from Python.

    import torch, vpipe
    for frame in vpipe.decode("in.mp4", device="cuda", filters="format=rgb24"):
        t = torch.from_dlpack(frame)          # H×W×3 uint8 on the GPU, no copy
    vpipe.transcode("in.mp4", "out.mp4", vf="resize=1280x720",
                    py_filter=lambda x: 255 - x)  # torch on the pipeline's stream

Frames come from vpipe's memory strategies (mem=, one of vpipe.strategies(); NVDEC's
frames are copied into them as they are decoded) and go back to them when the frame
and its tensors are gone.
"""
from ._api import (Decoder, Encoder, decode, decode_many, filters, load_plugin, set_verbose,
                   strategies, transcode)
from ._frames import Frame, Plane
from ._lib import InputError, Interrupted, VpipeError

__all__ = ["Decoder", "Encoder", "Frame", "InputError", "Interrupted", "Plane", "VpipeError", "decode",
           "decode_many", "filters", "load_plugin", "set_verbose", "strategies", "transcode"]
