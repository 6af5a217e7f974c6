"""vpipe.distributed on a real Dask cluster (issue #80): a dask-scheduler and dask-worker
processes on 127.0.0.1, talking TCP, the CPU path. Four workers declare a GPU, one does not;
one GPU worker is killed with SIGKILL in the middle of each run. Every output must be whole,
exact (frames, timestamps and, for a lossless encoder, pixels equal to one vpipe process's run
of the same options) and playable, with no stray file where the outputs go. The ffmpeg and
ffprobe tools are the oracle."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import vpipe.distributed as vd

VPIPE = os.environ.get("VPIPE_BIN", "vpipe")
FILES = 12


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def probe(path, entries, stream="v"):
    return sh("ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", entries,
              "-of", "csv=p=0", path).split()


def framemd5(path):
    """Each video frame's md5 (decoded by FFmpeg), without the timestamps column."""
    out = sh("ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-f", "framemd5", "-")
    return [line.split(",")[-1].strip() for line in out.splitlines() if not line.startswith("#")]


class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (shutil.which("dask-scheduler") and shutil.which("ffmpeg")):
            why = "needs Debian's python3-distributed and the ffmpeg tool (scripts/deps)"
            if os.environ.get("VPIPE_REQUIRE_DASK"):  # the test command installs them
                raise RuntimeError(why)
            raise unittest.SkipTest(why)
        cls.dir = tempfile.mkdtemp(prefix="vpipe_dask_")
        cls.procs = {}
        env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
        cls.scheduler_file = os.path.join(cls.dir, "scheduler.json")
        cls.procs["scheduler"] = subprocess.Popen(
            ["dask-scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", cls.scheduler_file], env=env,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(cls.dir, "scheduler.log"), "w"))
        for n in range(5):
            name = f"gpu{n}" if n < 4 else "nogpu"
            gpu = ["--resources", "GPU=1"] if n < 4 else []
            cls.procs[name] = subprocess.Popen(
                ["dask-worker", "--scheduler-file", cls.scheduler_file, "--nthreads", "1",
                 "--no-nanny", "--no-dashboard", "--name", name,
                 "--local-directory", os.path.join(cls.dir, name), *gpu], env=env,
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(cls.dir, f"{name}.log"), "w"))
        from distributed import Client
        for _ in range(200):
            if os.path.exists(cls.scheduler_file):
                break
            time.sleep(0.1)
        cls.client = Client(scheduler_file=cls.scheduler_file, timeout="30s")
        cls.client.wait_for_workers(5, timeout=60)
        cls.media = os.path.join(cls.dir, "media")
        os.makedirs(cls.media)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        for p in cls.procs.values():
            p.kill()
            p.wait()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def address_of(self, name):
        for address, w in self.client.scheduler_info()["workers"].items():
            if w.get("name") == name:
                return address
        return None

    def kill_when_busy(self, names):
        """Kills (SIGKILL) the first of `names` seen running a task: a worker lost mid-task."""
        def watch():
            for _ in range(600):
                busy = self.client.processing()
                for name in names:
                    address = self.address_of(name)
                    if address and busy.get(address):
                        time.sleep(0.3)  # well into the task
                        self.procs[name].send_signal(signal.SIGKILL)
                        self.killed.append((name, address))
                        return
                time.sleep(0.05)
        self.killed = []
        thread = threading.Thread(target=watch)
        thread.start()
        return thread

    def test_many_files_with_a_worker_killed(self):
        inputs = []
        for n in range(FILES):
            path = os.path.join(self.media, f"clip{n:02d}.mkv")
            sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
               f"testsrc2=size=160x120:rate=25:duration=4,hue=h={n * 30}", "-c:v", "ffv1", path)
            inputs.append(path)
        out = os.path.join(self.dir, "many")
        watcher = self.kill_when_busy(["gpu0", "gpu1"])
        # 100 frames at 10 ms each: a second a file, so that a worker dies mid-task.
        reports = vd.transcode_many(self.client, inputs, out, encoder="ffv1", vf="delay=ms=10",
                                    progress=False)
        watcher.join()
        self.assertEqual(len(self.killed), 1, "a worker was killed during the run")
        nogpu = self.address_of("nogpu")
        self.assertEqual(sorted(os.listdir(out)), sorted(os.path.basename(i) for i in inputs),
                         "the outputs and nothing else")
        for r, src in zip(reports, inputs):
            self.assertNotIn("error", r)
            self.assertNotEqual(r["worker"], nogpu, "a worker without a GPU got a GPU task")
            self.assertNotEqual(r["worker"], self.killed[0][1], "a killed worker's report")
            self.assertEqual(framemd5(r["output"]), framemd5(src), r["output"])

    def test_a_long_file_in_six_chunks_with_a_worker_killed(self):
        clip = os.path.join(self.media, "film.mkv")
        sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
           "testsrc2=size=160x120:rate=25:duration=120", "-f", "lavfi", "-i",
           "sine=frequency=440:sample_rate=48000:duration=120", "-c:v", "libx264", "-g", "50",
           "-pix_fmt", "yuv420p", "-c:a", "aac", clip)
        single = os.path.join(self.dir, "single.mkv")
        sh(VPIPE, "transcode", clip, single, "--encoder", "ffv1")
        out = os.path.join(self.dir, "chunked", "film.mkv")
        os.makedirs(os.path.dirname(out))
        watcher = self.kill_when_busy(["gpu2", "gpu3"])
        # 500 frames a chunk at 4 ms each: two seconds, so that a worker dies mid-chunk.
        result = vd.transcode_chunked(self.client, clip, out, chunks=6, encoder="ffv1",
                                      vf="delay=ms=4", progress=False)
        watcher.join()
        self.assertEqual(len(self.killed), 1, "a worker was killed during the run")
        self.assertEqual(len(result["chunks"]), 6)
        self.assertEqual(os.listdir(os.path.dirname(out)), ["film.mkv"], "no stray file")
        self.assertEqual(probe(out, "packet=pts_time"), probe(single, "packet=pts_time"))
        self.assertEqual(len(probe(out, "packet=pts_time")), 3000)
        self.assertEqual(framemd5(out), framemd5(single), "pixels equal one process's run")
        self.assertEqual(probe(out, "stream=codec_name", "a"), ["aac"])
        # The audio once, in one piece: every packet at the time one run gives it (one was lost
        # and all moved by the video's first time when the join counted from there).
        self.assertEqual(probe(out, "packet=pts_time", "a"), probe(single, "packet=pts_time", "a"))

    def test_the_front_end_and_an_unreachable_scheduler(self):
        src = os.path.join(self.media, "front.mkv")
        sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:duration=1",
           "-c:v", "ffv1", src)
        report = os.path.join(self.dir, "front.json")
        address = self.client.scheduler.address
        run = subprocess.run(
            [sys.executable, "-m", "vpipe.distributed", "--scheduler", address, "--json", report,
             "--option", "encoder=ffv1", "many", src, "--out-dir", os.path.join(self.dir, "front")],
            capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "front", "front.mkv")))
        self.assertTrue(os.path.exists(report))
        lost = subprocess.run(
            [sys.executable, "-m", "vpipe.distributed", "--scheduler", "tcp://127.0.0.1:9",
             "many", src, "--out-dir", os.path.join(self.dir, "never")],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(lost.returncode, 1)
        self.assertIn("cannot reach the Dask scheduler at tcp://127.0.0.1:9", lost.stderr)
        self.assertEqual(len(lost.stderr.strip().splitlines()), 1, lost.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "never")))

    def test_an_output_that_is_an_input_is_refused_before_any_task(self):
        src = os.path.join(self.media, "same.mkv")
        sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:duration=1",
           "-c:v", "ffv1", src)
        with open(src, "rb") as f:
            before = f.read()
        with self.assertRaisesRegex(ValueError, "that is an input"):
            vd.transcode_many(self.client, [src], self.media, progress=False)
        with self.assertRaisesRegex(ValueError, "both be written"):
            vd.transcode_many(self.client, [src, os.path.join(self.dir, "same.mkv")],
                              os.path.join(self.dir, "x"), progress=False)
        with open(src, "rb") as f:
            self.assertEqual(f.read(), before)


if __name__ == "__main__":
    unittest.main()
