#!/usr/bin/env python3
"""A PyTorch stage in a vpipe pipeline, two ways (GPU; torch with CUDA).

    PYTHONPATH=build/python python3 examples/python/torch_blur.py IN.mp4 OUT.mp4

1. vpipe.decode → your torch code → vpipe.Encoder: frames arrive as CUDA
   tensors that alias vpipe's memory (NVDEC, then vpipe's RGB conversion);
   the only copy is the download for the CPU encoder.
2. vpipe.transcode(py_filter=fn): vpipe runs fn on every frame, on the
   pipeline's thread and CUDA stream, between its own CUDA filters.
"""
import sys

import torch
import torch.nn.functional as F

import vpipe


def blur(x, sigma=1.5):
    """Separable Gaussian blur of an H×W×3 uint8 tensor, in float."""
    r = max(1, int(3 * sigma + 0.999))
    t = torch.arange(-r, r + 1, device=x.device, dtype=torch.float32)
    k = torch.exp(-t * t / (2 * sigma * sigma))
    k = k / k.sum()
    y = x.permute(2, 0, 1).unsqueeze(0).float()
    y = F.conv2d(F.pad(y, (r, r, 0, 0), mode="reflect"), k.view(1, 1, 1, -1).repeat(3, 1, 1, 1), groups=3)
    y = F.conv2d(F.pad(y, (0, 0, r, r), mode="reflect"), k.view(1, 1, -1, 1).repeat(3, 1, 1, 1), groups=3)
    return y.clamp(0, 255).round().to(torch.uint8).squeeze(0).permute(1, 2, 0).contiguous()


def main(src, dst):
    # 1. Your loop: decode, torch, encode (audio copied from the source).
    with vpipe.Encoder(dst, fps=30, audio_from=src) as enc:
        for frame in vpipe.decode(src, device="cuda", filters="resize=1280x720,format=rgb24"):
            enc.write(blur(torch.from_dlpack(frame)))
    print(dst, enc.final_stats)
    # 2. vpipe's loop: the same blur as a filter stage after vpipe's resize.
    report = vpipe.transcode(src, dst.replace(".mp4", "-filter.mp4"), vf="resize=1280x720", py_filter=blur)
    print(report["output"], report["frames"]["encoded"], "frames,", round(report["fps"]), "fps")


if __name__ == "__main__":
    main(*sys.argv[1:3])
