#!/usr/bin/env python3
"""The RESULTS table of the peers comparison from one or more bench_peers.py
runs: per row, vpipe's best strategy (the faster of slab and pool), naive,
each peer's fps, and vpipe best ÷ each peer.

    summarize.py RUN_A/peers.json[=A] [RUN_B/peers.json[=B] …]   → markdown on stdout
    summarize.py --check docs/RESULTS.md RUN_A/…   → exit 1 unless every line is in that file

A row present in several runs is taken from the last one given. --check is a
CTest: the figures in RESULTS are the ones the committed runs produce.
"""
import json
import sys

from bench_peers import input_order

PEERS = [("ffmpeg-cuda", "FFmpeg"), ("torch-opencv", "PyTorch"), ("opencv-cpu", "OpenCV CPU")]


def main():
    args = sys.argv[1:]
    check = None
    if args[:1] == ["--check"] and len(args) > 1:
        check, args = args[1], args[2:]
    if not args:
        raise SystemExit(__doc__)
    lines = table(args)
    if check is None:
        print("\n".join(lines))
        return
    text = open(check, encoding="utf-8").read()
    missing = [line for line in lines if line not in text]
    for line in missing:
        print(f"not in {check}: {line}", file=sys.stderr)
    if missing:
        raise SystemExit(1)
    print(f"summarize: all {len(lines)} lines are in {check}")


def table(args):
    rows = {}
    for k, arg in enumerate(args):
        path, _, label = arg.partition("=")
        for r in json.load(open(path)):
            rows[(r["input"], r["streams"])] = (r, label or chr(ord("A") + k))
    fps = lambda r, t: r.get(t, {}).get("fps")
    out = ["| input | streams | run | vpipe best | vpipe naive | FFmpeg CUDA path | PyTorch + OpenCV | "
           "OpenCV CPU | best ÷ FFmpeg | best ÷ PyTorch | best ÷ OpenCV CPU | naive ÷ best |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(rows, key=lambda k: (input_order(k[0]), k[1])):
        r, label = rows[key]
        best = max(("vpipe-slab", "vpipe-pool"), key=lambda t: fps(r, t) or 0)
        b = fps(r, best)
        if not b:
            continue
        cell = lambda t: f"{fps(r, t):.0f}" if fps(r, t) else "not run"
        ratio = lambda t: f"{b / fps(r, t):.2f}" if fps(r, t) else "–"
        naive = fps(r, "vpipe-naive")
        naive_ratio = f"{naive / b:.2f}" if naive else "–"
        out.append(f"| {key[0][3:-4]} | {key[1]} | {label} | {b:.0f} ({best[6:]}) | {cell('vpipe-naive')} | "
                   + " | ".join(cell(t) for t, _ in PEERS) + " | " + " | ".join(ratio(t) for t, _ in PEERS)
                   + f" | {naive_ratio} |")
    return out


if __name__ == "__main__":
    main()
