#!/usr/bin/env python3
"""The machine a suite ran on, as JSON on stdout: GPU name, UUID, driver and memory (nvidia-smi),
CPU model and cores (lscpu), host memory, the tool versions the peers use, the commit and the date.
A figure from two machines compares only through this record and the calibration beside it."""
import argparse
import datetime
import json
import os
import subprocess


def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unavailable: {e}"


def gpus():
    out = run(["nvidia-smi", "--query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm",
               "--format=csv,noheader,nounits"])
    keys = ["name", "uuid", "driver", "memory_mib", "max_sm_clock_mhz"]
    return [dict(zip(keys, (c.strip() for c in line.split(",")))) for line in out.splitlines() if "," in line]


def cpu():
    fields = dict(line.split(":", 1) for line in run(["lscpu"]).splitlines() if ":" in line)
    get = lambda k: fields.get(k, "").strip()
    return {"model": get("Model name"), "logical_cpus": int(get("CPU(s)") or os.cpu_count() or 0),
            "threads_per_core": get("Thread(s) per core"), "sockets": get("Socket(s)"),
            "usable_cpus": len(os.sched_getaffinity(0)), "family_model_stepping":
            "/".join(get(k) for k in ("CPU family", "Model", "Stepping")), "max_mhz": get("CPU max MHz") or None,
            "bogomips": get("BogoMIPS"), "l3": get("L3 cache"), "hypervisor": get("Hypervisor vendor") or None}


def host_memory_gib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1048576, 1)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", required=True)
    a = ap.parse_args()
    torch = run(["python3", "-c", "import torch, cv2; print(torch.__version__, cv2.__version__)"]).split()
    json.dump({"commit": a.commit, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "gpus": gpus(), "cpu": cpu(), "host_memory_gib": host_memory_gib(),
               "ffmpeg": run(["ffmpeg", "-hide_banner", "-version"]).split("\n")[0],
               "torch": torch[0] if torch else None, "opencv": torch[1] if len(torch) > 1 else None},
              __import__("sys").stdout, indent=2)


if __name__ == "__main__":
    main()
