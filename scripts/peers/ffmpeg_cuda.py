#!/usr/bin/env python3
"""Peer 2, FFmpeg's own CUDA path, with the ffmpeg tool: NVDEC decode into
CUDA frames, scale_cuda on the GPU, then hwdownload and the blur on the CPU
(this FFmpeg has no CUDA Gaussian blur; gblur at vpipe's sigma), libx264
with vpipe's settings (veryfast, crf 23), audio copied.

    ffmpeg_cuda.py IN OUT [--size 1280x720] [--sigma 1.5] [--cpu] [--json RESULT.json]

--cpu drops the hwaccel and scales on the CPU (for a machine without a GPU).
Prints one JSON line: tool, frames, wall_s, fps, steady_fps (from the progress reports after
the first 30 frames, 0.1 s apart), the command.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time

from peer_common import WARMUP


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--sigma", type=float, default=1.5)
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    w, h = a.size.split("x")
    if a.cpu:
        pre, vf = [], f"scale={w}:{h}:flags=area,gblur=sigma={a.sigma}"
    else:
        pre = ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
        vf = f"scale_cuda={w}:{h},hwdownload,format=nv12,gblur=sigma={a.sigma}"
    cmd = (["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostats", "-progress", "pipe:1",
            "-stats_period", "0.1", "-y"]
           + pre + ["-i", a.input, "-vf", vf,
                    # each decoded frame encoded once, as vpipe and the OpenCV peers do (the
                    # constant-rate default duplicates frames when the input's timing jitters)
                    "-fps_mode", "passthrough", "-c:v", "libx264", "-preset", "veryfast", "-crf", "23",
                    "-c:a", "copy", a.output])
    t0 = time.perf_counter()
    frames, warm, end = 0, None, None  # warm, end: (time, frames) at the warm-up and the last report
    # stderr to a file, not a pipe: a damaged input's error flood must not fill a pipe nobody
    # reads while the progress lines are read here
    with tempfile.TemporaryFile("w+") as err_file, \
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, text=True) as p:
        for line in p.stdout:  # -progress: a block of key=value lines every -stats_period
            if line.startswith("frame="):
                frames = int(line.split("=", 1)[1])
                end = (time.perf_counter(), frames)
                if warm is None and frames >= WARMUP:
                    warm = end
        p.wait()
        err_file.seek(0)
        err = err_file.read()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(err)
        last = err.strip().splitlines()[-1] if err.strip() else ""
        raise SystemExit(f"ffmpeg_cuda: ffmpeg failed ({p.returncode}): {last}")
    steady = (end[1] - warm[1]) / (end[0] - warm[0]) if warm and end[0] > warm[0] else 0.0
    result = {"tool": "ffmpeg-cpu" if a.cpu else "ffmpeg-cuda", "frames": frames, "wall_s": wall,
              "fps": frames / wall if wall > 0 else 0.0, "steady_fps": steady,
              "command": " ".join(cmd)}
    print(json.dumps(result))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
