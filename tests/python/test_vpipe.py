"""The vpipe Python package on the CPU path (CI): zero copy, frames equal to
FFmpeg's and to `vpipe transcode`, the Encoder, Python filters, errors, Ctrl-C.
Run by CTest (python_package) with PYTHONPATH at the built package."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import numpy as np

import vpipe

MEDIA = os.environ["VPIPE_MEDIA_DIR"]
VPIPE = os.environ["VPIPE_BIN"]
SAMPLE = os.path.join(MEDIA, "sample-720p.mp4")
ODD = os.path.join(MEDIA, "odd-720x405.mpg")


def ffmpeg_frames(path, pix_fmt, width, height, count, extra=()):
    """FFmpeg's own decode of `path` (the oracle): count frames as arrays."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, *extra, "-frames:v", str(count), "-f", "rawvideo",
                          "-pix_fmt", pix_fmt, "-"], check=True, capture_output=True).stdout
    per = {"gray": width * height, "rgb24": width * height * 3, "yuv420p": width * height * 3 // 2}[pix_fmt]
    return [np.frombuffer(raw[i * per:(i + 1) * per], np.uint8) for i in range(len(raw) // per)]


def frame_count(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", path], check=True, capture_output=True, text=True)
    return int(out.stdout.strip().split(",")[0])


def decoded(path, **kw):
    """Every frame of `path` through vpipe.decode, copied (the oracle side)."""
    return [np.array(np.from_dlpack(f.planes[0])) for f in vpipe.decode(path, device="cpu", **kw)]


class Tmp(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)


class Decode(Tmp):
    def test_frames_alias_vpipes_memory(self):
        for frame in vpipe.decode(SAMPLE, device="cpu", filters="format=rgb24", max_frames=3):
            self.assertEqual(frame.format, "rgb24")
            self.assertEqual(frame.device, "cpu")
            a = np.from_dlpack(frame)
            self.assertEqual(a.shape, (720, 1280, 3))
            self.assertEqual(a.ctypes.data, frame.data_ptr)             # DLPack: no copy
            self.assertEqual(np.asarray(frame).ctypes.data, frame.data_ptr)  # __array_interface__
            self.assertEqual(np.from_dlpack(frame.planes[0]).ctypes.data, frame.data_ptr)

    def test_luma_equals_ffmpegs_decode_exactly(self):
        ours = [f for f in vpipe.decode(SAMPLE, device="cpu", max_frames=12)]
        theirs = ffmpeg_frames(SAMPLE, "yuv420p", 1280, 720, 12)
        self.assertEqual(len(ours), 12)
        for f, ref in zip(ours, theirs):
            self.assertEqual(f.format, "yuv420p")
            y, u, v = (np.from_dlpack(p) for p in f.planes)
            self.assertEqual((y.shape, u.shape, v.shape), ((720, 1280), (360, 640), (360, 640)))
            got = np.concatenate([y.reshape(-1), u.reshape(-1), v.reshape(-1)])
            np.testing.assert_array_equal(got, ref)

    def test_ten_bit_frames_are_uint16_planes_equal_to_ffmpegs(self):
        # Issue #79 item 6: yuv420p10le as it is stored, through DLPack and the array interface.
        src = self.path("ten.mkv")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=96x64:r=25", "-frames:v", "3",
                        "-c:v", "ffv1", "-pix_fmt", "yuv420p10le", src], check=True)
        raw = subprocess.run(["ffmpeg", "-v", "error", "-i", src, "-f", "rawvideo", "-pix_fmt", "yuv420p10le", "-"],
                             check=True, capture_output=True).stdout
        want = np.frombuffer(raw, "<u2").reshape(3, -1)
        frames = 0
        for f, ref in zip(vpipe.decode(src, device="cpu"), want):
            self.assertEqual(f.format, "yuv420p10le")
            planes = [np.from_dlpack(p) for p in f.planes]
            self.assertEqual([p.dtype for p in planes], [np.uint16] * 3)
            self.assertEqual([p.shape for p in planes], [(64, 96), (32, 48), (32, 48)])
            self.assertEqual(planes[0].ctypes.data, f.data_ptr)  # no copy
            np.testing.assert_array_equal(np.concatenate([p.reshape(-1) for p in planes]), ref)
            np.testing.assert_array_equal(np.asarray(f.planes[1]), planes[1])  # __array_interface__
            self.assertGreater(int(planes[0].max()), 255)  # 10-bit values, not bytes
            frames += 1
        self.assertEqual(frames, 3)

    def test_a_cut_gives_the_frames_ffmpegs_trim_gives(self):
        ours = [f for f in vpipe.decode(SAMPLE, device="cpu", ss=1, duration=0.5)]
        theirs = ffmpeg_frames(SAMPLE, "yuv420p", 1280, 720, 1000,
                               extra=("-vf", "trim=start=1:duration=0.5,setpts=PTS-STARTPTS"))
        self.assertEqual(len(ours), len(theirs))
        self.assertGreater(len(ours), 5)
        for f, ref in zip(ours, theirs):
            got = np.concatenate([np.from_dlpack(p).reshape(-1) for p in f.planes])
            np.testing.assert_array_equal(got, ref)
        self.assertEqual(len(list(vpipe.decode(SAMPLE, device="cpu", ss="00:00:01", to=1.2))),
                         len(ffmpeg_frames(SAMPLE, "gray", 1280, 720, 1000,
                                           extra=("-vf", "trim=start=1:end=1.2,setpts=PTS-STARTPTS"))))

    def test_times_as_any_python_number(self):
        from fractions import Fraction
        # 1e-05 is JSON's spelling of 0.00001, which vpipe's time parser refused; a Fraction
        # was "not JSON serializable"; nan reached the parser as a JSON error.
        for ss in (0.00001, 1e-9, Fraction(1, 2)):
            self.assertEqual(len(list(vpipe.decode(SAMPLE, device="cpu", ss=ss, max_frames=2))), 2, ss)
        with self.assertRaisesRegex(ValueError, "ss=nan"):
            vpipe.decode(SAMPLE, device="cpu", ss=float("nan"))

    def test_odd_sized_mpeg2_decodes_every_frame(self):
        frames = decoded(ODD)
        self.assertEqual(len(frames), frame_count(ODD))
        self.assertEqual(frames[0].shape, (405, 720))

    def test_a_tensor_outlives_its_frame_and_the_decoder(self):
        d = vpipe.decode(SAMPLE, device="cpu", filters="format=rgb24")
        frame = next(d)
        kept = np.from_dlpack(frame)
        snapshot = kept.copy()
        ptr = frame.data_ptr
        d.close()
        frame.close()
        del d, frame
        for _ in vpipe.decode(SAMPLE, device="cpu", filters="format=rgb24", max_frames=5):
            pass  # other frames come and go; `kept` still holds its memory
        self.assertEqual(kept.ctypes.data, ptr)
        np.testing.assert_array_equal(kept, snapshot)

    def test_closing_early_stops_the_run(self):
        d = vpipe.decode(SAMPLE, device="cpu", loop=100)
        next(d)
        t0 = time.monotonic()
        d.close()
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(list(d), [])

    def test_decode_many_batches_one_frame_per_input(self):
        batches = list(vpipe.decode_many([SAMPLE, ODD], device="cpu", max_frames=4))
        self.assertEqual(len(batches), 4)
        self.assertEqual([(f.width, f.height) for f in batches[0]], [(1280, 720), (720, 405)])

    def test_errors_are_exceptions_with_vpipes_message(self):
        with self.assertRaisesRegex(vpipe.InputError, "no-such.mp4"):
            vpipe.decode(self.path("no-such.mp4"))
        with self.assertRaisesRegex(vpipe.InputError, "unknown filter 'nosuch'"):
            vpipe.decode(SAMPLE, filters="nosuch")
        f = next(vpipe.decode(SAMPLE, device="cpu"))
        with self.assertRaisesRegex(vpipe.InputError, "planes"):
            np.from_dlpack(f)  # yuv420p: three separate planes


class Encode(Tmp):
    def test_tensors_round_trip_through_the_encoder(self):
        out = self.path("gradient.mkv")
        ramp = np.tile(np.arange(320, dtype=np.uint8)[None, :, None], (240, 1, 3))
        with vpipe.Encoder(out, codec="ffv1", fps=25) as enc:
            for i in range(20):
                enc.write(np.ascontiguousarray(np.roll(ramp, i, axis=1)))
        self.assertEqual(enc.final_stats["frames"], 20)
        self.assertEqual(frame_count(out), 20)
        back = [np.array(np.from_dlpack(f)) for f in vpipe.decode(out, device="cpu", filters="format=rgb24")]
        self.assertEqual(len(back), 20)
        err = np.abs(back[5].astype(int) - np.roll(ramp, 5, axis=1).astype(int))
        self.assertLessEqual(err.max(), 3)  # RGB → YUV 4:2:0 → RGB of a smooth ramp

    def test_rgb_tensors_name_the_matrix_they_are_converted_with(self):
        # Untagged, a player reads an HD picture as BT.709; the Encoder converts as BT.601
        # (limited range; full into MJPEG's yuvj420p, as swscale makes it: its encoder names BT.601 bt470bg).
        for name, codec, want in (("hd.mp4", "libx264", "tv,smpte170m"), ("hd.avi", "mjpeg", "pc,bt470bg")):
            out = self.path(name)
            with vpipe.Encoder(out, codec=codec, fps=25) as enc:
                enc.write(np.zeros((720, 1280, 3), np.uint8))
            tags = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "stream=color_space,color_range", "-of", "csv=p=0", out],
                                  check=True, capture_output=True, text=True).stdout.split()
            self.assertEqual(tags, [want], name)

    def test_decoded_frames_and_audio_copy_across(self):
        out = self.path("copy.mp4")
        with vpipe.Encoder(out, fps=30, audio_from=SAMPLE) as enc:
            for f in vpipe.decode(SAMPLE, device="cpu", max_frames=30):
                enc.write(f)
        self.assertEqual(frame_count(out), 30)
        streams = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0",
                                  out], check=True, capture_output=True, text=True).stdout.split()
        self.assertEqual(streams, ["video", "audio"])
        self.assertGreater(enc.final_stats["audio_packets"], 0)

    def test_a_loop_that_raises_still_leaves_a_playable_file(self):
        out = self.path("partial.mp4")
        with self.assertRaises(KeyError):
            with vpipe.Encoder(out, fps=30) as enc:
                for i, f in enumerate(vpipe.decode(SAMPLE, device="cpu", max_frames=40)):
                    if i == 15:
                        raise KeyError("the caller's bug")
                    enc.write(f)
        self.assertEqual(frame_count(out), 15)

    def test_bad_tensors_and_paths_are_refused_clearly(self):
        with vpipe.Encoder(self.path("a.mp4")) as enc:
            with self.assertRaisesRegex(vpipe.InputError, "uint8"):
                enc.write(np.zeros((64, 64, 3), np.float32))
            enc.write(np.zeros((64, 64, 3), np.uint8))
            with self.assertRaisesRegex(vpipe.InputError, "every frame must have the first one's size"):
                enc.write(np.zeros((63, 64, 3), np.uint8))
        with self.assertRaisesRegex(vpipe.InputError, "never writes to what it reads"):
            vpipe.Encoder(SAMPLE, audio_from=SAMPLE)
        with self.assertRaisesRegex(vpipe.InputError, "cannot tell the container"):
            vpipe.Encoder(self.path("out.nosuchext"))

    def test_a_quality_option_the_encoder_does_not_take_is_refused(self):
        # Issue #79: crf given to ffv1 (lossless, no crf) was accepted and dropped.
        ramp = np.zeros((16, 16, 3), dtype=np.uint8)
        with self.assertRaisesRegex(vpipe.VpipeError, "encoder ffv1 takes no crf"):
            with vpipe.Encoder(self.path("q.mkv"), codec="ffv1", fps=25, crf=10) as enc:
                enc.write(ramp)
        self.assertFalse(os.path.exists(self.path("q.mkv")))

    def test_odd_sizes_are_padded_for_encoders_that_need_even_ones(self):
        # Issue #40: the Encoder refused 65x63 where the CLI pads (--fit pad).
        # libx264 takes 4:2:0 in multiples of 2x2: the right column and bottom
        # row are repeated. ffv1 takes odd sizes: they stay.
        ramp = np.tile(np.arange(65, dtype=np.uint8)[None, :, None] * 3, (63, 1, 3))
        for name, codec, size, quality in (("x.mp4", "libx264", (66, 64), {"crf": 0}),
                                           ("f.mkv", "ffv1", (65, 63), {})):
            out = self.path(name)
            with vpipe.Encoder(out, codec=codec, fps=25, **quality) as enc:
                for _ in range(5):
                    enc.write(ramp)
            back = [np.array(np.from_dlpack(f)) for f in vpipe.decode(out, device="cpu", filters="format=rgb24")]
            self.assertEqual(len(back), 5, name)
            self.assertEqual((back[0].shape[1], back[0].shape[0]), size, name)
            err = np.abs(back[0][:63, :65].astype(int) - ramp.astype(int))
            self.assertLessEqual(err.max(), 8, name)  # RGB → YUV 4:2:0 → RGB
            if size == (66, 64):
                edge = np.abs(back[0][:, 65].astype(int) - back[0][:, 64].astype(int))
                self.assertLessEqual(edge.max(), 8, "the right column repeated")
                bottom = np.abs(back[0][63].astype(int) - back[0][62].astype(int))
                self.assertLessEqual(bottom.max(), 8, "the bottom row repeated")

    def test_an_ffmpeg_prefix_does_not_hide_the_input(self):
        # Issue #40: "file:in.mp4 in.mp4" got past the overwrite check, from Python too.
        src = self.path("in.mp4")
        with open(SAMPLE, "rb") as f, open(src, "wb") as g:
            g.write(f.read())
        before = os.path.getsize(src), os.path.getmtime(src)
        for inp, out in (("file:" + src, src), (src, "file:" + src), (src, src.encode())):
            with self.assertRaisesRegex(vpipe.InputError, "never writes to what it reads"):
                vpipe.transcode(inp, out, max_frames=5)
        self.assertEqual((os.path.getsize(src), os.path.getmtime(src)), before)

    def test_read_only_arrays_and_bytes_or_pathlike_paths_are_taken(self):
        # Issue #40: a read-only array (np.from_dlpack's, a broadcast) raised a
        # BufferError, and a bytes path wrote a file named "b'…'".
        import pathlib
        frame = np.zeros((64, 64, 3), np.uint8)
        frame.flags.writeable = False
        broadcast = np.broadcast_to(np.uint8(128), (64, 64, 3))
        for name in (self.path("ro.mp4").encode(), pathlib.Path(self.path("ro2.mp4"))):
            with vpipe.Encoder(name) as enc:
                enc.write(frame)
                enc.write(broadcast)
        self.assertEqual(frame_count(self.path("ro.mp4")), 2)
        self.assertEqual(frame_count(self.path("ro2.mp4")), 2)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["ro.mp4", "ro2.mp4"])


class PythonFilter(Tmp):
    CHAIN = "resize=640x360"

    def test_a_numpy_filter_equals_the_builtin_invert(self):
        ours, theirs = self.path("py.mkv"), self.path("cli.mkv")
        seen = []

        def invert(x):
            seen.append((x.shape, x.dtype))
            return 255 - x

        report = vpipe.transcode(SAMPLE, ours, vf=self.CHAIN, py_filter=invert, device="cpu", encoder="ffv1",
                                 max_frames=15)
        self.assertEqual(report["frames"]["encoded"], 15)
        self.assertEqual(seen[0], ((360, 640, 3), np.uint8))
        subprocess.run([VPIPE, "transcode", SAMPLE, theirs, "--vf", self.CHAIN + ",format=rgb24,invert",
                        "--device", "cpu", "--encoder", "ffv1", "--frames", "15"], check=True, capture_output=True)
        a, b = decoded(ours), decoded(theirs)
        self.assertEqual(len(a), 15)
        self.assertEqual(len(b), 15)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)

    def test_a_filter_that_raises_fails_the_run_with_its_exception(self):
        def broken(x):
            raise ZeroDivisionError("in the user's filter")

        with self.assertRaisesRegex(ZeroDivisionError, "in the user's filter"):
            vpipe.transcode(SAMPLE, self.path("broken.mp4"), py_filter=broken, device="cpu", max_frames=10)


class Options(Tmp):
    def test_any_option_of_the_table_goes_by_its_name(self):
        out = self.path("segments.mp4")
        report = vpipe.transcode(SAMPLE, out, vf="resize=320x180", device="cpu", gop=25, encode_segments=2)
        self.assertIn("encode: 2 encoders at once on segments of 25 frames", " ".join(report["notes"]))
        self.assertEqual(frame_count(out), 150)
        with self.assertRaisesRegex(vpipe.InputError, "unknown option 'no_such_option'"):
            vpipe.transcode(SAMPLE, self.path("x.mp4"), device="cpu", no_such_option=1)

    def test_options_only_the_command_line_had_are_keys_too(self):
        # Issue #41: streams, budget sizes and input_option were flags alone.
        report = vpipe.transcode(SAMPLE, "null", vf="resize=160x90", device="cpu", max_frames=12,
                                 streams=2, input_option=["probesize=5000000"], keep_partial=True)
        self.assertEqual([s["frames"]["decoded"] for s in report["streams"]], [12, 12])
        self.assertEqual(report["aggregate"]["failed"], 0)
        with self.assertRaisesRegex(vpipe.InputError, "options: qscale 1: outside 2..31"):
            vpipe.transcode(SAMPLE, "null", device="cpu", qscale=1)
        with self.assertRaisesRegex(vpipe.InputError, "options: budget 2Q: expected bytes"):
            vpipe.transcode(SAMPLE, "null", device="cpu", budget="2Q")

    def test_strategies_are_the_command_lines(self):
        # One strategy table: Python's names are those `vpipe transcode --mem` offers, and each
        # is taken by mem= (an unknown one is refused).
        help_text = subprocess.run([VPIPE, "transcode", "--help"], capture_output=True, text=True).stdout
        offered = re.search(r"--mem \{([^}]*)\}", help_text).group(1).split("|")
        self.assertEqual(vpipe.strategies(), offered)
        self.assertTrue(set(vpipe.strategies(compared=True)) < set(offered))
        for mem in vpipe.strategies():
            report = vpipe.transcode(SAMPLE, "null", device="cpu", mem=mem, max_frames=2)
            self.assertEqual(report["frames"]["decoded"], 2, mem)
        with self.assertRaisesRegex(vpipe.InputError, "mem pool2"):
            vpipe.transcode(SAMPLE, "null", device="cpu", mem="pool2", max_frames=2)


    def test_a_smart_cut_a_thumbnail_and_a_track_map_go_by_their_names(self):
        # Issue #79: the new options are the schema's rows, so Python takes them as keywords.
        cut = self.path("smart.mp4")
        report = vpipe.transcode(SAMPLE, cut, encoder="copy", smart_cut=True, ss=0.5, to=4.5)
        self.assertIn("video packets copied", " ".join(report["notes"]))
        self.assertEqual(frame_count(cut), 120)
        thumb = self.path("thumb.png")
        vpipe.transcode(SAMPLE, thumb, thumbnail=2.0, device="cpu")
        codec = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                thumb], check=True, capture_output=True, text=True).stdout.strip()
        self.assertEqual(codec, "png")
        kept = self.path("kept.mp4")
        vpipe.transcode(SAMPLE, kept, map=["0:a:0"], device="cpu", max_frames=5)
        streams = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0",
                                  kept], check=True, capture_output=True, text=True).stdout.split()
        self.assertEqual(streams, ["video", "audio"])
        with self.assertRaisesRegex(vpipe.InputError, "map a:4: .* has 1 audio track"):
            vpipe.transcode(SAMPLE, self.path("x.mp4"), map=["a:4"], device="cpu", max_frames=5)
        with self.assertRaisesRegex(vpipe.InputError, "map s: .* has 0 subtitle tracks"):
            vpipe.transcode(SAMPLE, self.path("y.mp4"), map=["s"], device="cpu", max_frames=5)


class Outputs(Tmp):
    def test_one_decode_several_outputs_and_an_hls_ladder(self):
        # Issue #44: the outputs list and --hls go by their names, as every option does.
        a, b = self.path("a.mp4"), self.path("b.mkv")
        report = vpipe.transcode(SAMPLE, a + ":vf=resize=320x180", device="cpu", max_frames=30,
                                 outputs=[b + ":vf=resize=160x90:encoder=mpeg4"])
        self.assertEqual([o["frames"] for o in report["outputs"]], [30, 30])
        self.assertEqual(report["frames"]["decoded"], 30)
        self.assertEqual((frame_count(a), frame_count(b)), (30, 30))
        hls = self.path("hls")
        vpipe.transcode(SAMPLE, "360p", vf="resize=640x360", device="cpu", max_frames=50, hls=hls,
                        segment_s="1s")
        with open(os.path.join(hls, "master.m3u8")) as f:
            self.assertIn('RESOLUTION=640x360,CODECS="avc1.', text := f.read())
            self.assertIn('"\n360p/index.m3u8', text)


class Readme(Tmp):
    def test_the_python_pages_example_runs_as_written(self):
        with open(os.path.join(os.environ["VPIPE_SOURCE_DIR"], "docs", "PYTHON.md")) as f:
            page = f.read()
        code = page.split("```python\n", 1)[1].split("```", 1)[0]
        os.symlink(MEDIA, self.path("media"))
        done = subprocess.run([sys.executable, "-c", code], cwd=self.tmp, capture_output=True, text=True,
                              env=os.environ, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("True", done.stdout)
        self.assertEqual(frame_count(self.path("inverted.mp4")), frame_count(SAMPLE))
        self.assertEqual(frame_count(self.path("small.mp4")), frame_count(SAMPLE))


class CtrlC(Tmp):
    def run_and_interrupt(self, body, sig=signal.SIGINT):
        script = textwrap.dedent(body)
        p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=os.environ)
        self.assertEqual(p.stdout.readline().strip(), "started")
        time.sleep(0.5)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
        return p.returncode, out, err

    def test_ctrl_c_in_a_decode_loop(self):
        rc, out, err = self.run_and_interrupt(f"""
            import vpipe
            try:
                for i, f in enumerate(vpipe.decode({SAMPLE!r}, device="cpu", loop=1000)):
                    if i == 0:
                        print("started", flush=True)
            except KeyboardInterrupt:
                print("interrupted cleanly")
        """)
        self.assertEqual(rc, 0, err)
        self.assertIn("interrupted cleanly", out)

    def test_ctrl_c_in_a_transcode_finalizes_the_output(self):
        out_file = self.path("stopped.mp4")
        rc, out, err = self.run_and_interrupt(f"""
            import vpipe
            print("started", flush=True)
            try:
                vpipe.transcode({SAMPLE!r}, {out_file!r}, vf="resize=320x180", device="cpu", loop=1000,
                                py_filter=lambda x: x)
            except KeyboardInterrupt:
                print("interrupted cleanly")
        """)
        self.assertEqual(rc, 0, err)
        self.assertIn("interrupted cleanly", out)
        self.assertGreater(frame_count(out_file), 0)


    def test_sigterm_or_sighup_in_a_transcode_finalizes_the_output_then_ends_python(self):
        # Python's default for both is to die at once: the output's temporary file was left,
        # and no output. Now the run drains and finalizes, then the signal ends the process.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            folder = self.path(f"sig{int(sig)}")
            os.mkdir(folder)
            out_file = os.path.join(folder, "stopped.mp4")
            rc, out, err = self.run_and_interrupt(f"""
                import vpipe
                print("started", flush=True)
                vpipe.transcode({SAMPLE!r}, {out_file!r}, vf="resize=320x180", device="cpu", loop=1000)
            """, sig)
            self.assertEqual(rc, -sig, err)
            self.assertEqual(sorted(os.listdir(folder)), ["stopped.mp4"], "no temporary file left")
            self.assertGreater(frame_count(out_file), 0)


if __name__ == "__main__":
    unittest.main()
