"""Decode scaling (vpipe bench decode): raw NVDEC sessions, --streams N, one file with
--decode-sessions K, start-up excluded in the steady figures and included in the whole ones."""
from .common import load_json, table


def load(s):
    return load_json(s.file("decode", "decode.json")) if s.has("decode", "decode.json") else None


def load_pct(r):
    d = r.get("decoder_load") or {}
    return f"{d.get('mean_pct', 0):.0f} / {d.get('max_pct', 0):.0f}" if d.get("available") else "–"


def section(s):
    d = load(s)
    if not d:
        return ["No `bench decode` run in this suite (see its steps)."]
    probe = table(["raw sessions", "frames", "steady fps", "whole fps", "errors", "NVDEC load mean / max %"],
                  [[r["sessions"], f"{r['frames']:,}", f"{r['steady_fps']:,.0f}", f"{r['fps']:,.0f}", r["errors"],
                    load_pct(r)] for r in d["probe"]])
    streams = table(["vpipe --streams", "frames", "steady fps (sum)", "whole fps", "÷ raw, same sessions",
                     "÷ raw's best", "failed", "NVDEC load mean / max %"],
                    [[r["streams"], f"{r['frames']:,}", f"{r['steady_fps']:,.0f}", f"{r['fps']:,.0f}",
                      f"{r['fraction_of_probe_same_sessions']:.2f}" if r.get("fraction_of_probe_same_sessions") else "–",
                      f"{r['fraction_of_probe_best']:.2f}", r["failed"], load_pct(r)] for r in d["streams"]])
    segments = table(["--decode-sessions", "frames", "steady fps", "whole fps", "÷ 1 session, whole / steady",
                      "same timestamps as 1", "NVDEC load mean / max %"],
                     [[r["decode_sessions"], f"{r['frames']:,}", f"{r['steady_fps']:,.0f}", f"{r['fps']:,.0f}",
                       f"{r['whole_ratio_to_first']:.2f} / {r['steady_ratio_to_first']:.2f}",
                       "yes" if r["same_timestamps_as_first"] else "NO", load_pct(r)] for r in d["segments"]])
    best = max(r["fps"] for r in d["probe"])
    many = max(d["streams"], key=lambda r: r["fps"])
    return ([f"`vpipe bench decode` on the 1080p H.264 clip read {d['loop']} times per stream, `--vf "
             f"{d['filters']}`, `--mem {d['mem']}`, output null. Steady: after each session's or stream's first 30 "
             "frames; whole: the process, start-up included. NVDEC load: NVML's decoder utilisation.", "",
             "**Raw NVDEC** (packets from memory, frames dropped: the engines' ceiling on this clip):", ""] + probe +
            ["", "**Many streams** (`vpipe transcode … --streams N`):", ""] + streams +
            ["", "**One file** (`--decode-sessions K`, segments at keyframes):", ""] + segments +
            ["", f"The most streams reached {many['fps']:,.0f} fps whole ({many['streams']} streams): "
             f"{many['fps'] / best:.2f} of the raw probe's best, {best:,.0f} fps whole.", "",
             "Command: `scripts/gpu-suite decode`."])
