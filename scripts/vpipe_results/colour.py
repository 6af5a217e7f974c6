"""Colour conversions against FFmpeg (scripts/colour-matrix, issue #43 item 5): the newest GPU
smoke's colour-matrix-cuda.json (the CUDA path, on the GPU) and colour-matrix-cpu.json (the CPU
path, run at the same commit on the CPU machine; CI runs it too)."""
import os

from . import smoke
from .common import RUN_NAME, ceil_to, load_json, newest_run, rel, table


def _runs():
    run = smoke.newest()
    if not run:
        return None, {}
    found = {}
    for device in ("cpu", "cuda"):
        path = os.path.join(run, f"colour-matrix-{device}.json")
        if os.path.exists(path):
            found[device] = load_json(path)
    return run, found


def _later_check(run):
    """A targeted GPU check (docs/results/gpu-check-…) holding the CUDA colour check, made the
    smoke's day or later: its pass count, named (a change to the conversions checked on the GPU
    without a whole smoke)."""
    check = newest_run("gpu-check", holding="colour-matrix-cuda.json")
    if not check or (run and RUN_NAME.match(os.path.basename(check))["date"]
                     < RUN_NAME.match(os.path.basename(run))["date"]):
        return []
    data = load_json(os.path.join(check, "colour-matrix-cuda.json"))
    bad = [r["name"] for r in data["rows"] if not r["pass"]]
    return [f"A later targeted GPU check (`{rel(check)}`, its README says what ran): CUDA "
            f"{data['passed']} of {data['total']} within {data['tolerance_lsb']:g} level"
            + (f"; past it: {', '.join(bad)}." if bad else "."), ""]


def _cell(row):
    if row is None:
        return "–"
    if "error" in row:
        return "error"
    return f"{ceil_to(row['to_rgb_max'], 2):.2f} / {ceil_to(row['back_max'], 2):.2f}"


SITING = ("The rows named siting-…, footage-h264 and odd-mpeg2 (issue #79 item 3) compare whole "
          "first frames with sharp chroma, every pixel: testsrc2 as lossless HEVC tagged left, "
          "centre and top-left at 8 and 10 bits, MPEG-1 (centre), the sample's untagged H.264 "
          "(left), against zimg's 8-bit RGB (bilinear, no dither) and zimg's 4:2:0 of that RGB "
          "sited as the source; and a 720x405 MPEG-2, which zimg refuses, against the same rule in "
          "numpy. ")


def section(_suite):
    run, found = _runs()
    if not found:
        return ["No colour-matrix run beside the newest GPU smoke."]
    tol = next(iter(found.values()))["tolerance_lsb"]
    out = [f"`scripts/colour-matrix` (`{rel(run)}`): flat patches of 216 RGB colours as Y'CbCr in each "
           "matrix, range and depth (lossless HEVC, tagged; the JPEG-style source is MJPEG yuvj420p), "
           "through `vpipe transcode --vf format=rgb24` against FFmpeg's zimg (zscale, float RGB of the "
           "same decoded samples; its matrix and range from the frames' tags), and back with "
           "`--vf format=rgb24,format=yuv420p` against the source's samples. Each cell: the largest "
           f"difference in 8-bit levels, to RGB / back to Y'CbCr (tolerance {tol:g}: vpipe's RGB is "
           "8-bit, so a 10-bit source is checked at 8 bits, 4 levels of 10). "
           + (SITING if any(r["name"].startswith("siting-") for d in found.values() for r in d["rows"])
              else "") + "The CUDA path decodes with NVDEC where the report says so.", ""]
    for device, data in found.items():
        bad = [r["name"] for r in data["rows"] if not r["pass"]]
        out.append(f"- {device.upper()}: {data['passed']} of {data['total']} within {data['tolerance_lsb']:g} "
                   f"level" + (f"; past it: {', '.join(bad)}." if bad else "."))
    out.append("")
    names = [r["name"] for r in next(iter(found.values()))["rows"]]
    by = {d: {r["name"]: r for r in data["rows"]} for d, data in found.items()}
    header = ["source"]
    for d in found:
        header += [f"{d.upper()} decode", f"{d.upper()}: to RGB / back"]
    rows = []
    for n in names:
        row = [n]
        for d in found:
            r = by[d].get(n)
            row += [(r or {}).get("decode") or "–", _cell(r)]
        rows.append(row)
    tags = found.get("cpu", {}).get("rows", [])
    tagged = [r for r in tags if r.get("tags") is not None]
    if tagged:
        same = sum(r["tags"] == r["tags_want"] for r in tagged)
        sited = any(r["name"].startswith("siting-") for r in tagged)
        out += [f"The output's tags (ffprobe) are what they should be in {same} of {len(tagged)} CPU "
                "runs: the source's matrix, primaries, transfer and range"
                + ("; for the siting rows, an RGB output's GBR and full range and a 4:2:0 output's "
                   "chroma location." if sited else "."), ""]
    later = _later_check(run)
    return out + table(header, rows) + ([""] + later[:-1] if later else [])
