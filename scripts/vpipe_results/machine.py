"""The machine a suite ran on, and its own speeds measured without vpipe (the calibration)."""
from .common import load_json, span


def gpu(s):
    g = s.machine["gpus"][0] if s.machine["gpus"] else {"name": "no GPU found"}
    return g


def cpu_words(s):
    c = s.machine["cpu"]
    vm = f", {c['hypervisor']} guest" if c.get("hypervisor") else ""
    fms = f" (family/model/stepping {c['family_model_stepping']})" if c.get("family_model_stepping") else ""
    return f"{c['model']}{fms}, {c['usable_cpus']} cores{vm}"


def machine_line(s):
    g = gpu(s)
    n = len(s.machine["gpus"])
    return (f"{'one' if n == 1 else n} {g['name']} ({int(g['memory_mib']) // 1024} GiB, driver {g['driver']}, "
            f"{g['uuid']}); CPU {cpu_words(s)}; {s.machine['host_memory_gib']:.0f} GiB of host memory; "
            f"{s.machine['ffmpeg'].split(' Copyright')[0]}, torch {s.machine['torch']}, OpenCV {s.machine['opencv']}")


def leases_line(s):
    """Whether every lease the suite's calls ran on had the same GPU and CPU."""
    if len(s.machines) < 2:
        return ""
    gpus = {m["gpus"][0]["uuid"] for m in s.machines if m["gpus"]}
    cpus = {(m["cpu"]["model"], m["cpu"]["usable_cpus"]) for m in s.machines}
    same = len(gpus) == 1 and len(cpus) == 1
    return (f" The suite's calls ran in {len(s.machines)} leases of the machine, "
            + ("on the same GPU (its UUID) and CPU." if same else
               f"on {len(gpus)} GPUs ({', '.join(sorted(gpus))}) of one model: sections of different leases "
               "compare through the calibration, not directly."))


def calibration(s):
    return load_json(s.file("calibration", "calibration.json")) if s.has("calibration", "calibration.json") else None


def libx264_alone(s):
    c = calibration(s)
    return [r["fps"] for r in c["libx264"]] if c else []


def calibration_lines(s):
    c = calibration(s)
    if not c:
        return ["No calibration in this run (its step failed: see the suite's steps)."]
    nvdec = [r for r in c["nvdec_one_session"] if "fps" in r]
    frames = {r.get("frames_were") for r in nvdec}
    how = "frames left on the device" if frames == {"on-device"} else "frames downloaded by FFmpeg"
    return [f"The machine's own speeds, measured without vpipe in the same lease ({len(c['libx264'])} rounds; "
            "compare two machines through these): libx264 alone (1280×720 raw frames from a file, veryfast, "
            f"crf 23, the whole process) encodes {span(libx264_alone(s))} fps; a 1 GiB device-to-device copy moves "
            f"{span([r['gbps_read_plus_write'] for r in c['device_copy']])} GB/s (read + write); one NVDEC session "
            f"(FFmpeg's cuda hwaccel, {how}, the whole process) decodes "
            f"{span([r['fps'] for r in nvdec])} fps of the {c['clip_frames']}-frame 1080p clip read "
            f"{c['loops']} times."]
