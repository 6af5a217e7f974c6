"""The soak: every strategy side by side (--compare … --parallel), four soaks at once on one GPU."""
import os

from .common import load_json, span, table

SOAKS = [("ladder", "resolution ladder"), ("ladder-budget64M", "resolution ladder, 64 MB budget"),
         ("roi", "random ROI sizes"), ("roi-budget40M", "random ROI sizes, 40 MB budget")]


def pct(x):
    return "–" if x is None else f"{100 * x:+.1f} %"


def section(s):
    body, passed, total, wall, opts = [], 0, 0, [], []
    for soak, what in SOAKS:
        path = s.file("soak", f"{soak}/soak.json.gz")
        if not os.path.exists(path):
            body.append([what, "all", "did not run (see the suite's steps)"] + [""] * 9)
            continue
        d = load_json(path)
        opts.append(d["options"])
        for r in d["runs"]:
            v, sm = r["verdict"], r["samples"]
            probes = [x["probe_ms"] for x in sm if x.get("probe_ms") is not None]
            peak = max((x["reserved_mb"] or 0) for x in sm) if sm else 0
            why = "; ".join(v["reasons"]).replace("|", "/")
            total += 1
            passed += bool(v["pass"])
            wall.append(r["wall_s"])
            body.append([what, f"`{r['strategy']}`", "PASS" if v["pass"] else "FAIL", f"{r['frames']:,}",
                         f"{r['frames'] / r['wall_s']:.0f}", f"{peak:.1f}", pct(v["memory_growth"]),
                         pct(v.get("rss_growth")), pct(v["p99_drift"]),
                         f"{len(probes)} ({max(probes, default=0):.1f})", v["failures"], why[:160]])
    if not opts:
        return ["No soak ran in this suite (see its steps)."]
    o = opts[0]
    out = [f"{len(opts)} `vpipe soak --compare {','.join(o['strategies'])}"
           f"{' --parallel' if o['parallel'] else ''}` at once: {total} pipelines sharing one GPU, a "
           f"{o['width']}×{o['height']} source, `{o['filters']}`, a sample every {o['interval_s']:g} s, for "
           f"{o['duration_s'] / 60:.1f} minutes (a run whose allocation failed ended early): the suite's short "
           "soak, not an hours-long one. "
           f"{passed} of {total} runs passed their verdict (device memory and host RSS flat after warm-up, p99 "
           "latency without drift, no failed allocation).", ""]
    out += table(["soak", "strategy", "verdict", "frames", "mean fps", "peak reserved MB", "memory growth",
                  "host RSS growth", "p99 drift", "probes (longest ms)", "failed allocations", "why it failed"], body)
    return out + ["", "Command: `scripts/gpu-suite soak` (`SUITE_SOAK=2h` for a long one)."]
