"""End to end against the tools users would pick instead: FFmpeg's CUDA path and a PyTorch +
OpenCV script, at 1 and 8 streams (scripts/peers/bench_peers.py, run by scripts/gpu-suite)."""
from .common import ceil_to, floor_to, load_json, median, span, table
from .machine import libx264_alone

# (tool, what it is, the vpipe row with the same encoder: the ratio's numerator)
TOOLS = [("vpipe-pool", "vpipe, `--mem pool`, libx264", None),
         ("ffmpeg-cuda", "FFmpeg's CUDA path (NVDEC, `scale_cuda`, its CPU blur), libx264", "vpipe-pool"),
         ("vpipe-pool-mpeg4", "vpipe, `--mem pool`, MPEG-4 Part 2", None),
         ("torch-opencv", "a PyTorch script: OpenCV decodes on the CPU, torch resizes and blurs on the GPU, "
                          "OpenCV writes MPEG-4 Part 2", "vpipe-pool-mpeg4")]
CHAIN = "1080p H.264 → `resize=1280x720,blur=sigma=1.5` → 720p"


def rows(s):
    """peers.json's rows by stream count, each tool's runs; fails where a stored median is not
    the median of the runs beside it (the raw runs are the data; a summary cannot disagree)."""
    data = load_json(s.file("peers", "runs/peers.json"))
    out = {}
    for row in data:
        for tool, *_ in TOOLS:
            cell = row.get(tool, {})
            ok = [r["fps"] for r in cell.get("runs", []) if "fps" in r]
            if "fps" in cell and ok and abs(median(ok) - cell["fps"]) > 1e-6:
                raise SystemExit(f"results: {s.where()} peers.json, {row['streams']} stream(s), {tool}: "
                                 f"fps {cell['fps']} is not the median of its runs {ok}")
        out[row["streams"]] = row
    return out


def runs_of(row, tool):
    return row.get(tool, {}).get("runs", [])


def fps(row, tool, key="fps"):
    return [r[key] for r in runs_of(row, tool) if r.get(key)]


def ratios(row, mine, theirs, key="fps"):
    """vpipe ÷ the peer, round by round (each round ran the tools one after the other)."""
    a, b = runs_of(row, mine), runs_of(row, theirs)
    return [x[key] / y[key] for x, y in zip(a, b) if x.get(key) and y.get(key)]


def failed(row, tool):
    return sum(1 for r in runs_of(row, tool) if "fps" not in r)


def frames_per_stream(row):
    r = next(r for t, *_ in TOOLS for r in runs_of(row, t) if "frames" in r)
    return r["frames"] // row["streams"]


def section(s):
    by_n = rows(s)
    counts = sorted(by_n)
    one = by_n[counts[0]]
    head = ["tool"] + [f"{n} stream{'s' if n > 1 else ''}: fps" for n in counts] + ["1 stream: steady fps"] + \
        [f"vpipe ÷ it, {n}" for n in counts] + ["failed runs"]
    body = []
    for tool, what, mine in TOOLS:
        cells = [what] + [span(fps(by_n[n], tool)) for n in counts] + [span(fps(one, tool, "steady_fps"))]
        cells += [f"{span(ratios(by_n[n], mine, tool), 2)}×" if mine else "" for n in counts]
        cells.append(sum(failed(by_n[n], tool) for n in counts))
        body.append(cells)
    out = [f"{CHAIN}: libx264 veryfast crf 23 where the tool lets us choose it. Input: a {frames_per_stream(one) // one['loop']}-frame 1080p "
           f"H.264 clip read {one['loop']} times over ({frames_per_stream(one)} frames a stream), {one['repeat']} rounds, the "
           "tools one after the other in each round after one unmeasured warm-up run each. fps: frames written "
           "by all streams ÷ the whole process's wall time (start-up included); steady: after the first 30 "
           "frames. N streams: vpipe `--streams N` in one process, each peer as N processes. Ratios: vpipe "
           "with the same encoder ÷ the peer, round by round.", ""]
    out += table(head, body)
    out += ["", bound_sentence(s, by_n), "",
            "Command: `scripts/gpu-suite peers` (`scripts/peers/bench_peers.py --streams "
            f"{','.join(map(str, counts))} --repeat {one['repeat']} --loop {one['loop']}`)."]
    return out


def bound_sentence(s, by_n):
    alone = libx264_alone(s)
    one = fps(by_n[min(by_n)], "vpipe-pool")
    if not alone or not one:
        return ""
    many = max(by_n)
    per_stream = [f / many for f in fps(by_n[many], "vpipe-pool")]
    return (f"What bounds it: the encoder on this CPU. libx264 alone encodes {span(alone)} fps here (calibration); "
            f"vpipe with libx264 ran {floor_to(100 * min(one) / max(alone)):.0f}–"
            f"{ceil_to(100 * max(one) / min(alone)):.0f} % of that with one stream, and {span(per_stream)} fps a "
            f"stream with {many} (every encoder on the same {s.machine['cpu']['usable_cpus']} cores). With MPEG-4, "
            f"a cheaper encoder, the same pipeline ran {span(fps(by_n[min(by_n)], 'vpipe-pool-mpeg4'))} fps.")


def headline(s):
    """README's table: 1 and 8 streams side by side, the machine named."""
    by_n = rows(s)
    counts = sorted(by_n)
    body = []
    for tool, what, mine in TOOLS:
        body.append([what] + [f"{span(fps(by_n[n], tool))}" + (f" (vpipe {span(ratios(by_n[n], mine, tool), 1)}×)"
                                                                 if mine else "") for n in counts])
    return table([f"fps, whole process (range of {by_n[counts[0]]['repeat']} rounds)"] +
                 [f"{n} stream{'s' if n > 1 else ''}" for n in counts], body)
