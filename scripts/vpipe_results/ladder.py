"""One decode, many outputs (scripts/gpu-ladder, issue #44): the newest ladder-h200-* folder's
runs.jsonl and reports: a 3-rung ladder as one vpipe run, as three runs (one after another, and
at once), and FFmpeg's CUDA path (split, scale_cuda) into three outputs; then device memory held
with fan-out per strategy."""
import os

from .common import load_json, load_jsonl, newest_run, rel, run_commit, span, table

MODES = [("ladder", "one vpipe run, three outputs"), ("separate", "three vpipe runs, one after another"),
         ("concurrent", "three vpipe runs at once"), ("ffmpeg", "FFmpeg: split, scale_cuda, three outputs")]


def newest():
    return newest_run("ladder")


def _frames(run, r):
    """Frames per output of run line r (every output has the input's frames)."""
    if r["mode"] == "ffmpeg":
        return r.get("frames_per_output", 0)
    if r["mode"].startswith("memory-") or r["mode"] == "ladder":
        name = r["mode"] if r["mode"] != "ladder" else f"ladder-{r['encoder']}-{r['round']}"
        return min(o["frames"] for o in load_json(os.path.join(run, name + ".json"))["outputs"])
    rep = load_json(os.path.join(run, f"{r['mode']}-{r['encoder']}-{r['round']}-480.json"))
    return rep["frames"]["video_packets_written"]


def _ratio_rows(runs, enc):
    by = {(r["mode"], r["round"]): r for r in runs if r["encoder"] == enc}
    rounds = sorted({r for (m, r) in by if m == "ladder"})
    rows = []
    for mode, what in MODES[1:]:
        ratios = [by[(mode, k)]["whole_s"] / by[("ladder", k)]["whole_s"] for k in rounds
                  if (mode, k) in by and by[("ladder", k)]["whole_s"] > 0]
        rows.append([f"{mode} ({what})", span(ratios, 2, "×")])
    return rows


def _bound(run, runs, enc):
    """Which output the fork waited on, and how busy its encoder was, in each ladder run; and
    the issue's goals, round by round."""
    held, busy = {}, []
    for r in runs:
        if r["encoder"] != enc or r["mode"] != "ladder":
            continue
        rep = load_json(os.path.join(run, f"ladder-{enc}-{r['round']}.json"))
        k, slow = max(enumerate(rep["outputs"]), key=lambda o: o[1]["fork_wait_s"])
        held[os.path.basename(slow["output"])] = True
        enc_stage = next(st for st in rep["stages"] if st["name"] == f"encode {k + 1}")
        busy.append(100 * enc_stage["busy_s"] / rep["wall_s"])
    by = {(r["mode"], r["round"]): r["whole_s"] for r in runs if r["encoder"] == enc}
    rounds = sorted(k for (m, k) in by if m == "ladder")
    twice = sum(by.get(("separate", k), 0) >= 2 * by[("ladder", k)] for k in rounds)
    beat = sum(by.get(("ffmpeg", k), 0) >= by[("ladder", k)] for k in rounds)
    outs = ", ".join(held)
    return (f"What bounds the ladder: the fork waited most on {outs} in every round, whose encoder was busy "
            f"{span(busy, 0, ' %')} of the run (the other outputs' encoders had idle time). The issue's goals, "
            f"round by round: ≥ 2× three runs one after another in {twice} of {len(rounds)} rounds; as fast as "
            f"FFmpeg's or faster in {beat} of {len(rounds)}.")


def section(_suite):
    run = newest()
    if not run:
        return ["No `scripts/gpu-ladder` run in docs/results/."]
    runs = load_jsonl(os.path.join(run, "runs.jsonl"))
    commit = run_commit(run)
    rounds = max(r["round"] for r in runs)
    out = [f"`scripts/gpu-ladder` (`{rel(run)}`, commit {commit}, {rounds} rounds): the 1080p H.264 clip "
           "read 4 times, NVDEC decode, three outputs resized to 1920x1080, 1280x720 and 854x480 on the "
           "GPU, audio left out, each encoder in turn. Whole: the process (or the three processes) from "
           "start to exit; total fps: three outputs' frames over that time. Ranges over the rounds.", ""]
    for enc in sorted({r["encoder"] for r in runs if not r["mode"].startswith("memory-")}):
        rows = []
        for mode, what in MODES:
            mine = [r for r in runs if r["encoder"] == enc and r["mode"] == mode]
            if not mine:
                continue
            fps = [3 * _frames(run, r) / r["whole_s"] for r in mine if r["whole_s"] > 0]
            rows.append([what, span([r["whole_s"] for r in mine], 2, " s"), span(fps, 0),
                         f"{_frames(run, mine[0]):,}"])
        out += [f"**{enc}**:", ""] + table(["how", "whole", "total fps", "frames per output"], rows) + [""]
        out += table(["the ladder's speed-up over", "each round's ratio of wall times"], _ratio_rows(runs, enc))
        out += ["", _bound(run, runs, enc), ""]
    mem = [r for r in runs if r["mode"].startswith("memory-")]
    if mem:
        rows = []
        for r in mem:
            rep = load_json(os.path.join(run, r["mode"] + ".json"))
            m = rep.get("memory") or {}
            rows.append([r["mode"][len("memory-"):], f"{m.get('bytes_peak', 0) / 2**20:,.1f}",
                         f"{m.get('allocations', 0):,}", f"{3 * _frames(run, r) / r['whole_s']:,.0f}"])
        out += ["Device memory with fan-out (the ladder into mpeg4, once per strategy; the decoded frame "
                "copied once out of NVDEC and shared by the three branches):", ""]
        out += table(["--mem", "peak in use MiB", "allocations", "total fps"], rows)
    return out
