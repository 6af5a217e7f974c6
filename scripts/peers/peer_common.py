"""What the Python peers share: their command line, the video writer, the result line."""
import argparse
import json


def parse_args(doc, extra=(), options=()):
    """IN OUT [--size WxH] [--sigma S] [--json PATH], plus `extra` flags (name, help) and
    `options` with a value (name, default, help)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--sigma", type=float, default=1.5)
    ap.add_argument("--json")
    for name, help_text in extra:
        ap.add_argument(name, action="store_true", help=help_text)
    for name, default, help_text in options:
        ap.add_argument(name, default=default, help=help_text)
    a = ap.parse_args()
    a.width, a.height = (int(v) for v in a.size.split("x"))
    return a


def open_capture(path, tool):
    import cv2  # here, not at the top: ffmpeg_cuda.py shares this module and needs no OpenCV
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise SystemExit(f"{tool}: cannot open {path}")
    return cap, cap.get(cv2.CAP_PROP_FPS) or 30.0


def open_writer(path, fps, size, tool):
    """H.264 where this OpenCV build's FFmpeg backend offers it, else MPEG-4; and which."""
    import cv2
    for fourcc in ("avc1", "mp4v"):
        w = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*fourcc), fps, size)
        if w.isOpened():
            return w, fourcc
    raise SystemExit(f"{tool}: cannot open a writer for {path}")


WARMUP = 30  # frames before the steady-state clock starts (CUDA, cuDNN and encoder set-up)


def steady_fps(frames, t_warm, t_end):
    """Frames per second after the first WARMUP frames (0 for a shorter input)."""
    return (frames - WARMUP) / (t_end - t_warm) if frames > WARMUP and t_end > t_warm else 0.0


def report(result, json_path):
    """One JSON line on stdout (bench_peers.py reads the last line), and the file if asked."""
    wall = result["wall_s"]
    result["fps"] = result["frames"] / wall if wall > 0 else 0.0
    print(json.dumps(result))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f)
