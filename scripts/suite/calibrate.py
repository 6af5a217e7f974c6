#!/usr/bin/env python3
"""The machine's own speeds, measured without vpipe, so that suites from two machines compare as
ratios: libx264 alone (the headline chain's encoder, 1280x720 veryfast crf 23, raw frames from a
file), a 1 GiB device-to-device copy (torch, CUDA events), and one NVDEC session (FFmpeg's cuda
hwaccel, frames left on the device). Each ROUNDS times; whole-process wall time for the two
FFmpeg figures, start-up included, like the suite's fps."""
import argparse
import json
import os
import re
import subprocess
import time

LOOPS = 3  # the clip read three times over: 900 frames of the 10-s clip


def timed(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-600:]}")
    return time.perf_counter() - t


def frames_of(clip):
    """Video packets in the clip, counted by FFmpeg (the device has no ffprobe)."""
    err = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-i", clip, "-map", "0:v:0", "-c", "copy", "-f", "null",
                          "-"], capture_output=True, text=True, check=True).stderr
    return int(re.findall(r"frame=\s*(\d+)", err)[-1])


def libx264(raw, frames):
    wall = timed(["ffmpeg", "-hide_banner", "-nostdin", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "1280x720",
                  "-r", "30", "-stream_loop", str(LOOPS - 1), "-i", raw, "-c:v", "libx264", "-preset", "veryfast",
                  "-crf", "23", "-f", "null", "-"])
    return {"frames": frames * LOOPS, "wall_s": wall, "fps": frames * LOOPS / wall}


NVDEC_VARIANTS = {  # frames left on the device; where this FFmpeg cannot hand CUDA frames to the null
    "on-device": ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"],  # muxer, downloaded by it
    "downloaded": ["-hwaccel", "cuda"]}


def nvdec(clip, frames):
    errors = []
    for name, flags in NVDEC_VARIANTS.items():
        try:
            wall = timed(["ffmpeg", "-hide_banner", "-nostdin", *flags, "-stream_loop", str(LOOPS - 1), "-i", clip,
                          "-map", "0:v:0", "-f", "null", "-"])
            return {"frames": frames * LOOPS, "wall_s": wall, "fps": frames * LOOPS / wall, "frames_were": name,
                    "errors": errors}
        except RuntimeError as e:
            errors.append(str(e))
    return {"error": errors}


def device_copy():
    import torch
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        b.copy_(a)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end) / 20
    return {"bytes": n, "ms": ms, "gbps_read_plus_write": 2 * n / ms / 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clip", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    frames = frames_of(a.clip)
    raw = "/tmp/calibration-720p.yuv"
    subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-i", a.clip, "-vf",
                    "scale=1280:720", "-pix_fmt", "yuv420p", "-f", "rawvideo", raw], check=True)
    out = {"clip": os.path.basename(a.clip), "clip_frames": frames, "loops": LOOPS,
           "libx264": [], "device_copy": [], "nvdec_one_session": []}
    for _ in range(a.rounds):  # round-robin: a slow spell of the machine hits every figure
        out["libx264"].append(libx264(raw, frames))
        out["device_copy"].append(device_copy())
        out["nvdec_one_session"].append(nvdec(a.clip, frames))
        print(json.dumps({k: v[-1] for k, v in out.items() if isinstance(v, list)}), flush=True)
    os.remove(raw)
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    json.dump(out, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
