#!/usr/bin/env python3
"""Peer 1, PyTorch + OpenCV, written the way users write it: cv2.VideoCapture
-> a torch tensor on CUDA -> resize (F.interpolate, area) and a separable
Gaussian blur (conv2d) on the GPU -> back to the host -> cv2.VideoWriter.
One frame at a time, as a straightforward script does.

    torch_opencv.py IN OUT [--size 1280x720] [--sigma 1.5] [--json RESULT.json]

Prints one JSON line: tool, frames, wall_s, fps, device, the writer's FourCC,
and the bytes it copies between host and device per frame.
"""
import math
import time

import cv2
import torch
import torch.nn.functional as F

from peer_common import WARMUP, open_capture, open_writer, parse_args, report, steady_fps


def gaussian_taps(sigma, device):
    radius = max(1, math.ceil(3 * sigma))
    x = torch.arange(-radius, radius + 1, dtype=torch.float32, device=device)
    k = torch.exp(-(x * x) / (2 * sigma * sigma))
    return k / k.sum(), radius


def main():
    a = parse_args(__doc__)
    w, h = a.width, a.height
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    taps, r = gaussian_taps(a.sigma, dev)
    kx = taps.view(1, 1, 1, -1).repeat(3, 1, 1, 1)  # depthwise, one per channel
    ky = taps.view(1, 1, -1, 1).repeat(3, 1, 1, 1)
    cap, fps = open_capture(a.input, "torch_opencv")
    writer, fourcc = open_writer(a.output, fps, (w, h), "torch_opencv")
    frames = h2d = d2h = 0
    t0 = t_warm = time.perf_counter()
    with torch.no_grad():
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            h2d += frame.nbytes
            x = torch.from_numpy(frame).to(dev).permute(2, 0, 1).unsqueeze(0).float()
            x = F.interpolate(x, size=(h, w), mode="area")
            x = F.conv2d(F.pad(x, (r, r, 0, 0), mode="reflect"), kx, groups=3)
            x = F.conv2d(F.pad(x, (0, 0, r, r), mode="reflect"), ky, groups=3)
            out = x.clamp(0, 255).round().to(torch.uint8).squeeze(0).permute(1, 2, 0).contiguous()
            d2h += out.numel()
            writer.write(out.cpu().numpy())
            frames += 1
            if frames == WARMUP:
                t_warm = time.perf_counter()
    writer.release()
    t_end = time.perf_counter()
    report({"tool": "torch+opencv", "frames": frames, "wall_s": t_end - t0,
            "steady_fps": steady_fps(frames, t_warm, t_end),
            "device": str(dev), "writer_fourcc": fourcc, "h2d_bytes_per_frame": h2d / max(frames, 1),
            "d2h_bytes_per_frame": d2h / max(frames, 1), "torch": torch.__version__,
            "opencv": cv2.__version__}, a.json)


if __name__ == "__main__":
    main()
