#!/usr/bin/env python3
"""The RESULTS table of the peers comparison from one or more bench_peers.py
runs: per row, vpipe's best strategy (the faster of slab and pool), naive,
each peer's fps, and vpipe best ÷ each peer.

    summarize.py RUN_A/peers.json[=A] [RUN_B/peers.json[=B] …]   → markdown on stdout

A row present in several runs is taken from the last one given.
"""
import json
import sys

ORDER = ["in-1080p-h264.mp4", "in-1080p-hevc.mp4", "in-2160p-h264.mp4", "in-2160p-hevc.mp4"]
PEERS = [("ffmpeg-cuda", "FFmpeg"), ("torch-opencv", "PyTorch"), ("opencv-cpu", "OpenCV CPU")]


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    rows = {}
    for k, arg in enumerate(sys.argv[1:]):
        path, _, label = arg.partition("=")
        for r in json.load(open(path)):
            rows[(r["input"], r["streams"])] = (r, label or chr(ord("A") + k))
    fps = lambda r, t: r.get(t, {}).get("fps")
    print("| input | streams | run | vpipe best | vpipe naive | FFmpeg CUDA path | PyTorch + OpenCV | "
          "OpenCV CPU | best ÷ FFmpeg | best ÷ PyTorch | best ÷ OpenCV CPU | naive ÷ best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(rows, key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else 99, k[1])):
        r, label = rows[key]
        best = max(("vpipe-slab", "vpipe-pool"), key=lambda t: fps(r, t) or 0)
        b = fps(r, best)
        if not b:
            continue
        cell = lambda t: f"{fps(r, t):.0f}" if fps(r, t) else "not run"
        ratio = lambda t: f"{b / fps(r, t):.2f}" if fps(r, t) else "–"
        naive = fps(r, "vpipe-naive")
        naive_ratio = f"{naive / b:.2f}" if naive else "–"
        print(f"| {key[0][3:-4]} | {key[1]} | {label} | {b:.0f} ({best[6:]}) | {cell('vpipe-naive')} | "
              + " | ".join(cell(t) for t, _ in PEERS) + " | " + " | ".join(ratio(t) for t, _ in PEERS)
              + f" | {naive_ratio} |")


if __name__ == "__main__":
    main()
