"""The Python package: its GPU tests, and one job three ways (vpipe.decode + torch, vpipe's own
CUDA filters, a PyTorch + OpenCV script), scripts/gpu-python run by scripts/gpu-suite."""
import re

from .common import load_jsonl, open_data, span, table

TOOLS = [("vpipe-python", "`vpipe.decode` (NVDEC) → torch resize + blur → `vpipe.Encoder`"),
         ("vpipe-transcode", "`vpipe transcode` with its own CUDA filters"),
         ("torch+opencv", "the PyTorch + OpenCV script (OpenCV decode and writer)")]


def tests_line(s):
    with open_data(s.file("python", "python-gpu-tests.txt")) as f:
        text = f.read()
    ran = re.search(r"Ran (\d+) tests? in ([\d.]+)s", text)
    skipped = len(re.findall(r"\.\.\. skipped", text))
    ok = re.search(r"^OK", text, re.M) is not None
    if not ran:
        return "The package's GPU tests did not report (see the suite's steps)."
    return (f"The package's GPU tests (`tests/python/test_vpipe_gpu.py`): {ran.group(1)} ran, "
            f"{'all passed' if ok else 'NOT all passed'}, {skipped} skipped.")


def section(s):
    rows = load_jsonl(s.file("python", "python-bench.jsonl"))
    body = []
    for tool, what in TOOLS:
        mine = [r for r in rows if r["tool"] == tool]
        for enc in sorted({r.get("encoder") or r.get("writer_fourcc") for r in mine}):
            rs = [r for r in mine if (r.get("encoder") or r.get("writer_fourcc")) == enc]
            steady = [r["steady_fps"] for r in rs if r.get("steady_fps")]
            h2d = rs[0].get("h2d_bytes_per_frame")
            body.append([what, enc, span([r["fps"] for r in rs]), span(steady),
                         "–" if h2d is None else f"{h2d:,.0f}", f"{rs[0]['d2h_bytes_per_frame']:,.0f}"])
    rounds = sorted({r["repeat"] for r in rows})
    out = [tests_line(s), "", f"The same job three ways on a {rows[0]['frames']}-frame 1080p H.264 clip, resize "
           f"to 1280×720 + Gaussian σ=1.5, {len(rounds)} rounds; fps over the whole run and after 30 frames.", ""]
    out += table(["path", "encoder", "fps, whole run", "fps, steady", "host→device B/frame", "device→host B/frame"],
                 body)
    return out + ["", f"Command: `scripts/gpu-suite python` (`scripts/gpu-python {len(rounds)}`)."]
