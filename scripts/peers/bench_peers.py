#!/usr/bin/env python3
"""vpipe against the tools users would pick instead, in one run (issue 8).

For each input (1080p and 4K, H.264 and HEVC) and each count of concurrent
streams (1, 4, 8), every tool transcodes the input to 1280x720 with a
Gaussian blur (sigma 1.5) into H.264 (libx264 veryfast crf 23 where the
tool lets us choose); N streams = N copies at once (vpipe: --streams N in
one process; the peers: N processes). fps = frames written by all copies /
wall time from the first start to the last end. Prints a markdown table
(fps and each tool's ratio to vpipe's best), writes every figure as JSON.

    bench_peers.py --vpipe PATH --inputs DIR --out DIR [--streams 1,4,8] [--tools …]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE, SIGMA = "1280x720", 1.5
CHAIN = f"resize={SIZE},blur=sigma={SIGMA}"


def run_parallel(cmds, env=None):
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for c in cmds]
    outs = [p.communicate() for p in procs]
    wall = time.perf_counter() - t0
    return wall, [(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def vpipe_run(vpipe, mem, inp, out_dir, n):
    report = os.path.join(out_dir, "report.json")
    cmd = [vpipe, "transcode", inp, os.path.join(out_dir, "out.mp4"), "--vf", CHAIN, "--mem", mem,
           "--streams", str(n), "--report", report]
    wall, [(rc, _, err)] = run_parallel([cmd])
    if rc != 0:
        return {"error": err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"}
    j = json.load(open(report))
    if n == 1:
        frames = j["frames"]["video_packets_written"]
        inner = j["wall_s"]
    else:
        frames = j["aggregate"]["frames_written"]
        inner = j["aggregate"]["wall_s"]
    # The process's wall time (opening files, NVDEC set-up included), like the peers'.
    return {"frames": frames, "wall_s": wall, "fps": frames / wall, "pipeline_wall_s": inner}


def peer_run(script, inp, out_dir, n, extra=()):
    py_env = dict(os.environ)
    py_env.pop("LD_LIBRARY_PATH", None)  # the peers use their own libraries (pip wheels)
    if script == "ffmpeg_cuda.py":
        py_env["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")  # the packed ffmpeg's
    cmds = [[sys.executable, os.path.join(HERE, script), inp, os.path.join(out_dir, f"out-{k}.mp4"),
             "--size", SIZE, "--sigma", str(SIGMA), *extra] for k in range(n)]
    wall, res = run_parallel(cmds, env=py_env)
    frames, errors = 0, []
    for rc, out, err in res:
        if rc != 0:
            errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {rc}")
            continue
        frames += json.loads(out.strip().splitlines()[-1])["frames"]
    if errors:
        return {"error": errors[0]}
    return {"frames": frames, "wall_s": wall, "fps": frames / wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vpipe", required=True)
    ap.add_argument("--inputs", required=True,
                    help="folders (comma-separated) holding in-1080p-h264.mp4 … in-2160p-hevc.mp4")
    ap.add_argument("--out", required=True)
    ap.add_argument("--streams", default="1,4,8")
    ap.add_argument("--tools", default="vpipe-pool,vpipe-naive,ffmpeg-cuda,torch-opencv,opencv-cpu")
    a = ap.parse_args()
    tools = a.tools.split(",")
    inputs = sorted((f, d) for d in a.inputs.split(",") if os.path.isdir(d) for f in os.listdir(d)
                    if f.startswith("in-") and f.endswith(".mp4"))
    results = []
    for inp, folder in inputs:
        for n in (int(s) for s in a.streams.split(",")):
            row = {"input": inp, "streams": n}
            for tool in tools:
                d = os.path.join(a.out, f"{inp[:-4]}-{n}-{tool}")
                os.makedirs(d, exist_ok=True)
                path = os.path.join(folder, inp)
                if tool.startswith("vpipe-"):
                    r = vpipe_run(a.vpipe, tool.split("-", 1)[1], path, d, n)
                elif tool == "ffmpeg-cuda":
                    r = peer_run("ffmpeg_cuda.py", path, d, n)
                elif tool == "torch-opencv":
                    r = peer_run("torch_opencv.py", path, d, n)
                elif tool == "opencv-cpu":
                    r = peer_run("opencv_cpu.py", path, d, n)
                else:
                    raise SystemExit(f"unknown tool {tool}")
                row[tool] = r
                print(f"{inp} x{n} {tool}: {r}", file=sys.stderr, flush=True)
                for f in os.listdir(d):  # keep the reports, not the videos
                    if f.endswith(".mp4"):
                        os.remove(os.path.join(d, f))
            results.append(row)
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump(results, f, indent=2)
    base = tools[0]
    print(f"| input | streams | " + " | ".join(f"{t} fps" for t in tools) + " | " +
          " | ".join(f"{t} ÷ {base}" for t in tools[1:]) + " |")
    print("|---|---|" + "---|" * (2 * len(tools) - 1))
    for row in results:
        fps = [row[t].get("fps") for t in tools]
        cells = [f"{v:.0f}" if v else f"failed: {row[t].get('error', '?')}" for t, v in zip(tools, fps)]
        ratios = [f"{v / fps[0]:.2f}" if v and fps[0] else "-" for v in fps[1:]]
        print(f"| {row['input'][3:-4]} | {row['streams']} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    main()
