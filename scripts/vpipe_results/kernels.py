"""The kernels against the device's copy bandwidth (vpipe bench kernels, two rounds)."""
from .common import plural, span, table


def runs(s):
    return s.rounds_of("kernels", "kernels")


def section(s):
    rs = runs(s)
    if not rs:
        return ["No `bench kernels` run in this suite (see its steps)."]
    keys = []
    for r in rs[0]:
        if "kernel" in r and (r["resolution"], r["kernel"]) not in keys:
            keys.append((r["resolution"], r["kernel"]))
    body, met_all, with_goal = [], 0, 0
    for res, kernel in keys:
        cell = [r for run in rs for r in run if r["resolution"] == res and r.get("kernel") == kernel]
        goal = cell[0].get("goal")
        met = all(r.get("met") for r in cell) if goal else None
        with_goal += goal is not None
        met_all += bool(met)
        body.append([res, kernel, span([r["us"] for r in cell], 1), span([r["gbps"] for r in cell]),
                     span([100 * r["pct_of_peak_copy"] for r in cell], 0, " %"),
                     f"{100 * goal:.0f} %" if goal else "–",
                     "–" if met is None else ("yes" if met else "no")])
    peak = [r["peak_copy_gbps"] for run in rs for r in run[:1]]
    out = [f"`vpipe bench kernels`, {plural(len(rs), 'round')}: CUDA events around batches of back-to-back runs, the median "
           f"batch. The device's peak copy (1 GiB, read + write) measured {span(peak)} GB/s in the same runs; a "
           f"kernel's goal is a share of it. {met_all} of {with_goal} kernels with a goal met it in every round.", ""]
    out += table(["frame", "kernel", "µs", "GB/s", "of peak copy", "goal", "met"], body)
    return out + segments(rs) + ["", "Command: `scripts/gpu-suite kernels` (`vpipe bench kernels --json …`)."]


def segments(rs):
    """Whole chain segments: the bytes they must move against the peak copy, launched and as a graph."""
    names = []
    for r in rs[0]:
        if "segment" in r and (r["resolution"], r["segment"]) not in names:
            names.append((r["resolution"], r["segment"]))
    if not names:
        return []
    body = []
    for res, seg in names:
        cell = [r for run in rs for r in run if r["resolution"] == res and r.get("segment") == seg]
        body.append([res, f"`{seg}`", span([r["launches_us"] for r in cell], 1), span([r["graph_us"] for r in cell], 1),
                     span([100 * r["pct_launches"] for r in cell], 0, " %"),
                     span([100 * r["pct_graph"] for r in cell], 0, " %"), f"{100 * cell[0]['goal']:.0f} %",
                     "yes" if all(r["met"] for r in cell) else "no"])
    return ["", "Whole chain segments, against the bytes they must move at the peak copy's rate:", ""] + table(
        ["frame", "segment", "launches µs", "one graph µs", "of peak, launches", "of peak, graph", "goal", "met"],
        body)
