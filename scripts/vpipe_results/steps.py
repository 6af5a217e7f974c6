"""What the suite ran: every step with its exit status and time, so a failure stands beside the
figures it would qualify."""
from .common import table

MEANING = {("kernels", 1): "ran; a kernel missed its bandwidth goal", ("soak", 3): "ran; a verdict failed"}


def section(s):
    body = []
    for st in s.steps():
        rc = st["exit"]
        said = "passed" if rc == 0 else MEANING.get((st["section"], rc), f"FAILED (exit {rc})")
        body.append([st["section"], st["step"], said, "–" if st["seconds"] is None else f"{st['seconds']} s"])
    parts = ", ".join(f"{p.get('sections') or 'part ' + p['part']} ({p['started'][11:16]}–{p['ended'][11:16]} UTC)" for p in s.parts)
    return [f"Calls, each one `scripts/gpu-suite SECTIONS`: {parts}.", ""] + table(
        ["section", "step", "result", "time"], body)
