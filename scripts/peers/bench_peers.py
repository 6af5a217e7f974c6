#!/usr/bin/env python3
"""vpipe against the tools users would pick instead, in one run (issue 8).

For each input (1080p and 4K, H.264 and HEVC) and each count of concurrent
streams (1, 4, 8), every tool transcodes the input to 1280x720 with a
Gaussian blur (sigma 1.5) into H.264 (libx264 veryfast crf 23 where the
tool lets us choose); N streams = N copies at once (vpipe: --streams N in
one process; the peers: N processes). fps = frames written by all copies /
wall time from the first start to the last end. Prints a markdown table
(fps and each tool's ratio to the first tool), writes every figure as JSON;
scripts/gpu-suite runs it for RESULTS (scripts/vpipe_results/peers.py reads its runs).

    bench_peers.py --vpipe PATH --inputs DIR --out DIR [--streams 1,4,8] [--tools …]
                   [--loop K] [--repeat R] [--run-timeout S] [--budget S] [--table FILE]

Tools: vpipe-MEM (libx264 with the peers' settings), vpipe-MEM-mpeg4 (the OpenCV peers'
encoder), ffmpeg-cuda, torch-opencv, opencv-cpu. --repeat R runs each cell R times,
round-robin over the tools, and keeps every run, the median (fps, steady_fps) and the best;
steady_fps (one stream) is each tool's rate after its first 30 frames.

--loop K first writes each input K times over into one file (the ffmpeg tool,
stream copy), so that every tool reads the same longer input and start-up
(CUDA context, NVDEC, encoder set-up) weighs less. A run past --run-timeout
is killed and reported as such; after --budget seconds no new run starts (the
rest are reported "not run"). The table is rewritten to --table after every
row, so a run cut short still leaves what it measured.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE, SIGMA = "1280x720", 1.5
CHAIN = f"resize={SIZE},blur=sigma={SIGMA}"


RUN_TIMEOUT = 120.0
PEERS = {"ffmpeg-cuda": "ffmpeg_cuda.py", "torch-opencv": "torch_opencv.py", "opencv-cpu": "opencv_cpu.py"}


def input_order(name):
    """in-1080p-h264.mp4 before in-2160p-…, H.264 before HEVC: the headline rows
    first if the time budget runs out, and the table's row order."""
    return int(name.split("-")[1].rstrip("p")), name


def keep_output(out_dir, res):
    """Each command's stdout and stderr beside its report (what a run said, in the archive)."""
    for k, (_, out, err) in enumerate(res):
        for name, text in (("stdout", out), ("stderr", err)):
            with open(os.path.join(out_dir, f"{name}-{k}.log"), "w") as f:
                f.write(text)


def run_parallel(cmds, env=None):
    """Runs the commands at once; (wall, [(rc, stdout, stderr)]); rc None = killed at RUN_TIMEOUT."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for c in cmds]
    outs = []
    for p in procs:
        left = max(1.0, RUN_TIMEOUT - (time.perf_counter() - t0))
        try:
            outs.append(p.communicate(timeout=left) + (p.returncode,))
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
            outs.append((o, e + f"\nkilled after {RUN_TIMEOUT:.0f} s", None))
    wall = time.perf_counter() - t0
    return wall, [(rc, o, e) for o, e, rc in outs]


def last_line(err, rc):
    lines = err.strip().splitlines()
    return lines[-1] if lines else f"exit {rc}"


def looped(inp, k, out_dir):
    """The input k times over in one file (stream copy), made once; k <= 1: the input itself."""
    if k <= 1:
        return inp
    dst = os.path.join(out_dir, f"{os.path.basename(inp)[:-4]}-x{k}.mp4")
    if not os.path.exists(dst):
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-stream_loop", str(k - 1),
                        "-i", inp, "-c", "copy", dst], check=True)
    return dst


def vpipe_run(vpipe, tool, inp, out_dir, n):
    """tool: vpipe-MEM (libx264, the peers' settings) or vpipe-MEM-mpeg4 (the OpenCV peers' encoder)."""
    mem, _, encoder = tool.split("-", 1)[1].partition("-")
    report = os.path.join(out_dir, "report.json")
    # the encoder named (auto would probe for NVENC first: the H200 has none)
    enc = ["--encoder", "mpeg4"] if encoder == "mpeg4" else \
        ["--encoder", "libx264", "--preset", "veryfast", "--crf", "23"]
    cmd = [vpipe, "transcode", inp, os.path.join(out_dir, "out.mp4"), "--vf", CHAIN, "--mem", mem,
           *enc, "--streams", str(n), "--report", report]
    wall, res = run_parallel([cmd])
    keep_output(out_dir, res)
    [(rc, _, err)] = res
    if rc != 0:
        return {"error": last_line(err, rc)}
    j = json.load(open(report))
    if n == 1:
        frames = j["frames"]["video_packets_written"]
        inner = j["wall_s"]
    else:
        frames = j["aggregate"]["frames_written"]
        inner = j["aggregate"]["wall_s"]
    # The process's wall time (opening files, NVDEC set-up included), like the peers'.
    r = {"frames": frames, "wall_s": wall, "fps": frames / wall, "pipeline_wall_s": inner}
    if n == 1:
        r["steady_fps"] = j.get("steady_fps", 0.0)
    return r


def peer_run(script, inp, out_dir, n, extra=()):
    py_env = dict(os.environ)
    py_env.pop("LD_LIBRARY_PATH", None)  # the peers use their own libraries (pip wheels)
    if script == "ffmpeg_cuda.py":
        py_env["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")  # the packed ffmpeg's
    cmds = [[sys.executable, os.path.join(HERE, script), inp, os.path.join(out_dir, f"out-{k}.mp4"),
             "--size", SIZE, "--sigma", str(SIGMA), *extra] for k in range(n)]
    wall, res = run_parallel(cmds, env=py_env)
    keep_output(out_dir, res)
    frames, errors, lines = 0, [], []
    for rc, out, err in res:
        if rc != 0:
            errors.append(last_line(err, rc))
            continue
        lines.append(json.loads(out.strip().splitlines()[-1]))
        frames += lines[-1]["frames"]
    if errors:
        return {"error": errors[0]}
    r = {"frames": frames, "wall_s": wall, "fps": frames / wall}
    if n == 1 and "steady_fps" in lines[0]:
        r["steady_fps"] = lines[0]["steady_fps"]
    return r


def summary(runs):
    """A cell over its repeated runs: best and median whole-process fps (and steady-state where
    the tool reports it); "fps" is the median, what the one-run tables read."""
    ok = [r for r in runs if "fps" in r]
    if len(ok) < len(runs):
        return {"error": next(r["error"] for r in runs if "error" in r), "runs": runs}
    cell = {"runs": runs, "fps": statistics.median(r["fps"] for r in ok),
            "fps_best": max(r["fps"] for r in ok)}
    steady = [r["steady_fps"] for r in ok if r.get("steady_fps")]
    if len(steady) == len(ok):
        cell["steady_fps"] = statistics.median(steady)
        cell["steady_fps_best"] = max(steady)
    return cell


def table(tools, results):
    base = tools[0]
    lines = [f"| input | streams | " + " | ".join(f"{t} fps" for t in tools) + " | " +
             " | ".join(f"{t} ÷ {base}" for t in tools[1:]) + " |",
             "|---|---|" + "---|" * (2 * len(tools) - 1)]
    for row in results:
        fps = [row[t].get("fps") for t in tools]
        cells = [f"{v:.0f}" if v else f"failed: {row[t].get('error', '?')}" for t, v in zip(tools, fps)]
        ratios = [f"{v / fps[0]:.2f}" if v and fps[0] else "-" for v in fps[1:]]
        lines.append(f"| {row['input'][3:-4]} | {row['streams']} | " + " | ".join(cells) + " | " +
                     " | ".join(ratios) + " |")
    return "\n".join(lines) + "\n"


def main():
    global RUN_TIMEOUT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vpipe", required=True)
    ap.add_argument("--inputs", required=True,
                    help="folders (comma-separated) holding in-1080p-h264.mp4 … in-2160p-hevc.mp4")
    ap.add_argument("--out", required=True)
    ap.add_argument("--streams", default="1,4,8")
    ap.add_argument("--tools", default="vpipe-slab,vpipe-pool,vpipe-naive,ffmpeg-cuda,torch-opencv,opencv-cpu")
    ap.add_argument("--loop", type=int, default=1)
    ap.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT)
    ap.add_argument("--budget", type=float, default=0, help="seconds; 0 = no limit")
    ap.add_argument("--table", help="markdown table, rewritten after every row")
    ap.add_argument("--only", default="", help="comma-separated input names to run (default: all)")
    ap.add_argument("--no-warm-up", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per cell, round-robin over the tools; the cell keeps every run, "
                         "its best and its median")
    a = ap.parse_args()
    RUN_TIMEOUT = a.run_timeout
    tools = a.tools.split(",")
    inputs = sorted(((f, d) for d in a.inputs.split(",") if os.path.isdir(d) for f in os.listdir(d)
                     if f.startswith("in-") and f.endswith(".mp4")),
                    key=lambda fd: input_order(fd[0]))
    if a.only:
        inputs = [(f, d) for f, d in inputs if f in a.only.split(",")]
    shutil.rmtree(a.out, ignore_errors=True)  # fresh: no run of an earlier call is read as this one's
    os.makedirs(a.out)

    def run_tool(tool, path, d, n):
        os.makedirs(d, exist_ok=True)
        if tool.startswith("vpipe-"):
            r = vpipe_run(a.vpipe, tool, path, d, n)
        elif tool in PEERS:
            r = peer_run(PEERS[tool], path, d, n)
        else:
            raise SystemExit(f"unknown tool {tool}")
        for f in os.listdir(d):  # keep the reports, not the videos
            if f.endswith(".mp4"):
                os.remove(os.path.join(d, f))
        return r

    # One unmeasured run per tool first: the first CUDA process on a machine pays
    # for JIT compilation (FFmpeg's CUDA filters ship PTX) and cold caches.
    if not a.no_warm_up and inputs:
        for tool in tools:
            r = run_tool(tool, os.path.join(inputs[0][1], inputs[0][0]), os.path.join(a.out, f"warm-up-{tool}"), 1)
            print(f"warm-up {tool}: {r}", file=sys.stderr, flush=True)
    t_start = time.perf_counter()
    results = []
    for inp, folder in inputs:
        path = looped(os.path.join(folder, inp), a.loop, a.out)
        for n in (int(s) for s in a.streams.split(",")):
            row = {"input": inp, "streams": n, "loop": a.loop, "repeat": a.repeat}
            runs = {tool: [] for tool in tools}
            for k in range(a.repeat):  # round-robin: a slow spell of the machine hits every tool
                for tool in tools:
                    if a.budget and time.perf_counter() - t_start > a.budget:
                        runs[tool].append({"error": "not run (time budget spent)"})
                        continue
                    sub = f"{inp[:-4]}-{n}-{tool}" + (f"-{k + 1}" if a.repeat > 1 else "")
                    runs[tool].append(run_tool(tool, path, os.path.join(a.out, sub), n))
                    print(f"{inp} x{n} {tool} #{k + 1}: {runs[tool][-1]}", file=sys.stderr, flush=True)
            for tool in tools:
                row[tool] = summary(runs[tool]) if a.repeat > 1 else runs[tool][0]
            results.append(row)
            with open(os.path.join(a.out, "peers.json"), "w") as f:
                json.dump(results, f, indent=2)
            if a.table:
                with open(a.table, "w") as f:
                    f.write(table(tools, results))
    sys.stdout.write(table(tools, results))


if __name__ == "__main__":
    main()
