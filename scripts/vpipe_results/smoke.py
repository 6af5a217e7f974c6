"""The newest GPU smoke (scripts/gpu-smoke: everything a user can start), kept beside the suite."""
import os
import re

from .common import newest_run, open_data, rel, table


LIMIT_S = 360  # everything a user can start, in at most 6 minutes of the machine (scripts/gpu-smoke)


def newest():
    return newest_run("gpu-smoke")


def section(_suite):
    run = newest()
    if not run:
        return ["No GPU smoke beside this suite."]
    with open_data(os.path.join(run, "smoke.md")) as f:
        text = f.read()
    title = text.splitlines()[0].lstrip("# ")
    steps = re.findall(r"^\| (\w+) \| (pass|FAIL)[^|]*\|", text, re.M)
    failed = [name for name, result in steps if result != "pass"]
    out = [f"{title} (`{rel(run)}`): {len(steps) - len(failed)} of {len(steps)} steps passed"
           + (f"; failed: {', '.join(failed)}" if failed else "") + f"; {timing(title)}.", ""]
    return out + table(["step", "result"], [[n, r] for n, r in steps]) if failed else out


def timing(title):
    """The smoke's own time (the title ends 'N s') against its limit."""
    m = re.search(r"(\d+) s$", title)
    if not m:
        return "its time is not recorded"
    secs = int(m.group(1))
    return (f"within its {LIMIT_S // 60}-minute limit" if secs <= LIMIT_S
            else f"{secs - LIMIT_S} s OVER its {LIMIT_S // 60}-minute limit")
