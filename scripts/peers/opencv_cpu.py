#!/usr/bin/env python3
"""Peer 3, OpenCV on the CPU only, written the way users write it:
cv2.VideoCapture -> cv2.resize (INTER_AREA) -> cv2.GaussianBlur -> cv2.VideoWriter.

    opencv_cpu.py IN OUT [--size 1280x720] [--sigma 1.5] [--json RESULT.json]

Prints one JSON line: tool, frames, wall_s, fps, the writer's FourCC.
OpenCV works in BGR: the decoder's YUV is converted to BGR and back for the
encoder (vpipe filters YUV planes directly); the blur runs on all three BGR
channels at one sigma (vpipe scales it for the subsampled chroma).
"""
import time

import cv2

from peer_common import WARMUP, open_capture, open_writer, parse_args, report, steady_fps


def main():
    a = parse_args(__doc__)
    cap, fps = open_capture(a.input, "opencv_cpu")
    writer, fourcc = open_writer(a.output, fps, (a.width, a.height), "opencv_cpu")
    frames = 0
    t0 = t_warm = time.perf_counter()
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        small = cv2.resize(frame, (a.width, a.height), interpolation=cv2.INTER_AREA)
        writer.write(cv2.GaussianBlur(small, (0, 0), a.sigma))
        frames += 1
        if frames == WARMUP:
            t_warm = time.perf_counter()
    writer.release()
    t_end = time.perf_counter()
    report({"tool": "opencv-cpu", "frames": frames, "wall_s": t_end - t0,
            "steady_fps": steady_fps(frames, t_warm, t_end),
            "writer_fourcc": fourcc, "opencv": cv2.__version__}, a.json)


if __name__ == "__main__":
    main()
