#!/usr/bin/env python3
"""Peer 3, OpenCV on the CPU only, written the way users write it:
cv2.VideoCapture -> cv2.resize (INTER_AREA) -> cv2.GaussianBlur -> cv2.VideoWriter.

    opencv_cpu.py IN OUT [--size 1280x720] [--sigma 1.5] [--json RESULT.json]

Prints one JSON line: tool, frames, wall_s, fps, the writer's FourCC.
OpenCV works in BGR: the decoder's YUV is converted to BGR and back for the
encoder (vpipe filters YUV planes directly); the blur runs on all three BGR
channels at one sigma (vpipe scales it for the subsampled chroma).
"""
import argparse
import json
import time

import cv2


def open_writer(path, fps, size):
    # H.264 where this OpenCV build's FFmpeg backend offers it, else MPEG-4.
    for fourcc in ("avc1", "mp4v"):
        w = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*fourcc), fps, size)
        if w.isOpened():
            return w, fourcc
    raise SystemExit(f"opencv_cpu: cannot open a writer for {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--sigma", type=float, default=1.5)
    ap.add_argument("--json")
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    cap = cv2.VideoCapture(a.input)
    if not cap.isOpened():
        raise SystemExit(f"opencv_cpu: cannot open {a.input}")
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    writer, fourcc = open_writer(a.output, fps, (w, h))
    frames = 0
    t0 = time.perf_counter()
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        small = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)
        writer.write(cv2.GaussianBlur(small, (0, 0), a.sigma))
        frames += 1
    writer.release()
    wall = time.perf_counter() - t0
    result = {"tool": "opencv-cpu", "frames": frames, "wall_s": wall,
              "fps": frames / wall if wall > 0 else 0.0, "writer_fourcc": fourcc,
              "opencv": cv2.__version__}
    print(json.dumps(result))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
