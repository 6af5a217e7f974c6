"""docs/MEMORY.md's measured guide: per strategy, from the newest suite, its allocation latency,
its end-to-end rate in the pipeline, and how it fared in the soak (verdicts, memory held)."""
import os

from . import soak, strategies
from .common import load_json, span, table


def soak_runs(s):
    out = {}
    for name, what in soak.SOAKS:
        path = s.file("soak", f"{name}/soak.json.gz")
        if os.path.exists(path):
            for r in load_json(path)["runs"]:
                out.setdefault(r["strategy"], []).append((what, r))
    return out


def block(s):
    lat = load_json(s.file("strategies", "mem-latency.json"))["latency"] if s.has(
        "strategies", "mem-latency.json") else []
    runs = strategies.pipeline_runs(s)
    soaks = soak_runs(s)
    names = list(dict.fromkeys([r["strategy"] for r in lat] + [r["mem"] for run in runs for r in run["rows"]]))
    body = []
    for n in names:
        mine = [r for r in lat if r["strategy"] == n]
        e2e = strategies.cells(runs, n, "pinned", "end_to_end")
        syncs = [(r["end_to_end"].get("memory") or {}).get("device_syncs", 0) for run in runs for r in run["rows"]
                 if r["mem"] == n and r["host"] == "pinned"]
        verdicts = soaks.get(n, [])
        passed = sum(1 for _, r in verdicts if r["verdict"]["pass"])
        peak = [max((x["reserved_mb"] or 0) for x in r["samples"]) for w, r in verdicts if "budget" not in w]
        body.append([f"`{n}`", span([r["alloc_us"]["p50"] for r in mine], 2),
                     span([r["free_us"]["p50"] for r in mine], 2), span(e2e), span(syncs),
                     f"{passed} of {len(verdicts)}", span(peak, 1)])
    return [f"From the newest suite (`{s.name}`, commit `{s.commit}`; [RESULTS](RESULTS.md) has every table): "
            "allocation latency from `vpipe bench mem` (p50, over the sizes), end to end from `vpipe bench pipeline` "
            "(1080p H.264 → resize + blur → libx264, NVDEC, pinned staging, every round), and the soak's "
            "verdicts and the most device memory each strategy held without a budget.", ""] + table(
        ["strategy", "allocate p50 µs", "free p50 µs", "end to end fps", "device syncs per run", "soaks passed",
         "peak reserved MB, no budget"], body)
