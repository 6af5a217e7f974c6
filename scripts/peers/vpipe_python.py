#!/usr/bin/env python3
"""vpipe's Python frames, the torch work of torch_opencv.py: vpipe.decode on
the GPU (NVDEC, frames converted to RGB by vpipe, handed to torch without a
copy) -> resize (F.interpolate, area) and a separable Gaussian blur (conv2d),
the same code as the torch + OpenCV peer -> vpipe.Encoder (the device tensor
goes in through DLPack; the one copy is the download for the CPU encoder).

    vpipe_python.py IN OUT [--size 1280x720] [--sigma 1.5] [--encoder libx264] [--json RESULT.json]

Prints one JSON line: tool, frames, wall_s, fps, bytes copied per frame.
"""
import time

import torch
import torch.nn.functional as F

import vpipe
from peer_common import WARMUP, parse_args, report, steady_fps
from torch_opencv import gaussian_taps


def main():
    a = parse_args(__doc__, options=(("--encoder", "libx264", "vpipe.Encoder's codec"),
                                     ("--mem", "pool", "vpipe's memory strategy for the frames")))
    w, h = a.width, a.height
    dev = torch.device("cuda")
    taps, r = gaussian_taps(a.sigma, dev)
    kx = taps.view(1, 1, 1, -1).repeat(3, 1, 1, 1)
    ky = taps.view(1, 1, -1, 1).repeat(3, 1, 1, 1)
    frames, aliased = 0, 0
    t0 = t_warm = time.perf_counter()
    decoder = vpipe.decode(a.input, device="cuda", decoder="nvdec", mem=a.mem, filters="format=rgb24")
    with vpipe.Encoder(a.output, codec=a.encoder, fps=30) as enc, torch.no_grad():
        for frame in decoder:
            t = torch.from_dlpack(frame)                 # H×W×3 uint8, vpipe's memory
            aliased += t.data_ptr() == frame.data_ptr
            x = t.permute(2, 0, 1).unsqueeze(0).float()
            x = F.interpolate(x, size=(h, w), mode="area")
            x = F.conv2d(F.pad(x, (r, r, 0, 0), mode="reflect"), kx, groups=3)
            x = F.conv2d(F.pad(x, (0, 0, r, r), mode="reflect"), ky, groups=3)
            out = x.clamp(0, 255).round().to(torch.uint8).squeeze(0).permute(1, 2, 0).contiguous()
            enc.write(out)
            frames += 1
            if frames == WARMUP:
                t_warm = time.perf_counter()
    t_end = time.perf_counter()
    wall = t_end - t0
    stats = enc.final_stats
    result = {"tool": "vpipe-python", "frames": frames, "wall_s": wall,
              "steady_fps": steady_fps(frames, t_warm, t_end),
              "encoder": stats["encoder"], "mem": a.mem, "decode": decoder.report["decode"],
              "frames_aliased": aliased, "h2d_bytes_per_frame": 0,
              "d2h_bytes_per_frame": stats["device_to_host_bytes"] / max(frames, 1),
              "torch": torch.__version__}
    report(result, a.json)


if __name__ == "__main__":
    main()
