"""The vpipe Python package on the GPU (run by scripts/gpu-python on the H200):
NVDEC frames and strategy memory as zero-copy torch tensors, DLPack stream
semantics, a torch filter on the pipeline's stream, device tensors into the
Encoder. Skips, saying why, where torch or a CUDA device is missing."""
import os
import subprocess
import sys
import tempfile
import unittest

import vpipe

try:
    import torch
    CUDA = torch.cuda.is_available()
    WHY = "" if CUDA else "torch sees no CUDA device"
except ImportError:
    torch, CUDA, WHY = None, False, "torch is not installed"

MEDIA = os.environ.get("VPIPE_MEDIA_DIR", "media")
CLIP = os.environ.get("VPIPE_GPU_CLIP", os.path.join(MEDIA, "sample-720p.mp4"))
STRATEGIES = vpipe.strategies(compared=True)  # the strategy table, never a copy of it


@unittest.skipUnless(CUDA, WHY)
class Gpu(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_nvdec_frames_are_device_memory_torch_aliases(self):
        d = vpipe.decode(CLIP, device="cuda", decoder="nvdec", max_frames=8)
        n = 0
        for f in d:
            self.assertEqual((f.device, f.format), ("cuda", "nv12"))
            y, uv = (torch.from_dlpack(p) for p in f.planes)  # NVDEC's surface: Y, then UV rows further on
            self.assertTrue(y.is_cuda and uv.is_cuda)
            self.assertEqual(y.data_ptr(), f.data_ptr)  # zero copy
            self.assertEqual(uv.data_ptr(), f.planes[1].__cuda_array_interface__["data"][0])
            self.assertEqual(tuple(y.shape), (f.height, f.width))
            self.assertEqual(tuple(uv.shape), (f.height // 2, f.width // 2, 2))
            n += 1
        self.assertEqual(n, 8)
        self.assertEqual(d.report["decode"], "nvdec")
        self.assertNotIn("upload_ring", d.report["memory"])    # no host→device copy per frame
        self.assertNotIn("download_ring", d.report["memory"])  # no device→host copy per frame

    def test_nvdec_ten_bit_frames_are_uint16_p010_equal_to_the_cpu_decode(self):
        # Issue #79 item 6: P010 from NVDEC as uint16 (10 bits at the top of each word), one
        # block of (H*3/2)×W; the CPU decode's yuv420p10le (bits at the bottom) is the oracle.
        src = os.path.join(".devrt", "colour-matrix", "siting-left-10bit.mkv")
        if not os.path.exists(src):
            self.skipTest(f"{src}: made by scripts/pack-gpu (colour-matrix make)")
        cpu = [[torch.from_dlpack(p).clone() for p in f.planes] for f in vpipe.decode(src, device="cpu")]
        n = 0
        for f, ref in zip(vpipe.decode(src, device="cuda", decoder="nvdec"), cpu):
            self.assertEqual((f.device, f.format), ("cuda", "p010le"))
            y, uv = (torch.from_dlpack(p) for p in f.planes)
            self.assertEqual((y.dtype, uv.dtype), (torch.uint16, torch.uint16))
            h, w = ref[0].shape
            self.assertEqual((tuple(y.shape), tuple(uv.shape)), ((h, w), (h // 2, w // 2, 2)))
            self.assertTrue(torch.equal((y.cpu().to(torch.int32) >> 6), ref[0].to(torch.int32)))
            self.assertTrue(torch.equal((uv[..., 0].cpu().to(torch.int32) >> 6), ref[1].to(torch.int32)))
            n += 1
        self.assertEqual(n, len(cpu))
        self.assertGreater(n, 0)

    def test_every_strategy_gives_the_cpu_paths_pixels(self):
        chain = "resize=640x360,format=rgb24"
        cpu = [torch.from_dlpack(f).clone() for f in vpipe.decode(CLIP, device="cpu", filters=chain, max_frames=6)]
        for mem in STRATEGIES:
            with self.subTest(mem=mem):
                gpu = []
                for f in vpipe.decode(CLIP, device="cuda", mem=mem, filters=chain, max_frames=6):
                    t = torch.from_dlpack(f)
                    self.assertTrue(t.is_cuda)
                    self.assertEqual(t.data_ptr(), f.data_ptr)
                    gpu.append(t.cpu())
                self.assertEqual(len(gpu), 6)
                for a, b in zip(gpu, cpu):
                    self.assertLessEqual((a.int() - b.int()).abs().max().item(), 2)

    def test_a_tensor_outlives_the_decoder_and_its_strategy(self):
        for mem in ("pool", "slab"):
            d = vpipe.decode(CLIP, device="cuda", mem=mem, filters="format=rgb24")
            f = next(d)
            kept = torch.from_dlpack(f)
            self.assertTrue(kept.is_cuda, mem)  # strategy memory, not a host copy
            snapshot = kept.clone()
            d.close()
            f.close()
            del d, f
            for g in vpipe.decode(CLIP, device="cuda", mem=mem, filters="format=rgb24", max_frames=10):
                torch.from_dlpack(g).add_(1)  # other frames' memory is written
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(kept, snapshot), mem)

    def test_the_consumers_stream_waits_for_the_frame(self):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for f in vpipe.decode(CLIP, device="cuda", filters="format=rgb24", max_frames=4):
                t = torch.from_dlpack(f)  # __dlpack__(stream=s): s waits on the frame's event
                self.assertTrue(t.is_cuda)
                m = t.float().mean()
            s.synchronize()
        self.assertGreater(m.item(), 0)

    def test_a_torch_filter_on_the_pipeline_stream_equals_the_builtin(self):
        ours, theirs = self.path("py.mkv"), self.path("builtin.mkv")
        seen = []

        def invert(x):
            seen.append((x.is_cuda, torch.cuda.current_stream().cuda_stream))
            return 255 - x

        vpipe.transcode(CLIP, ours, vf="resize=640x360", py_filter=invert, device="cuda", encoder="ffv1",
                        max_frames=12)
        vpipe.transcode(CLIP, theirs, vf="resize=640x360,format=rgb24,invert", device="cuda", encoder="ffv1",
                        max_frames=12)
        self.assertTrue(seen and all(cuda for cuda, _ in seen))
        self.assertNotEqual(seen[0][1], 0)  # the pipeline's stream, not the legacy default
        a = [torch.from_dlpack(f.planes[0]).clone() for f in vpipe.decode(ours, device="cpu")]
        b = [torch.from_dlpack(f.planes[0]).clone() for f in vpipe.decode(theirs, device="cpu")]
        self.assertEqual(len(a), 12)
        self.assertEqual(len(a), len(b))
        for x, y in zip(a, b):
            self.assertTrue(torch.equal(x, y))

    def test_a_filter_in_a_process_that_never_imported_torch(self):
        # The README's example: only numpy and vpipe imported, device auto. torch
        # imported for the first time on the pipeline's thread hung in its CUDA
        # set-up (the GPU smoke's doc blocks, a85820c): a fresh interpreter, a limit.
        out = self.path("fresh.mp4")
        code = ("import numpy, vpipe\n"
                f"r = vpipe.transcode({CLIP!r}, {out!r}, vf='resize=640x360', py_filter=lambda x: 255 - x,"
                " max_frames=10)\n"
                "import sys; print(r['device'], r['frames']['encoded'], 'torch' in sys.modules)\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertEqual(done.stdout.split(), ["cuda", "10", "True"])

    def test_device_tensors_into_the_encoder(self):
        # RGB tensors become YUV on the GPU (half the bytes downloaded); the
        # same tensors from the host go through swscale: the pictures agree.
        gpu_out, host_out = self.path("from-cuda.mkv"), self.path("from-host.mkv")
        with vpipe.Encoder(gpu_out, codec="ffv1", fps=30) as enc, \
                vpipe.Encoder(host_out, codec="ffv1", fps=30) as ref:
            for f in vpipe.decode(CLIP, device="cuda", filters="resize=640x360,format=rgb24", max_frames=20):
                t = 255 - torch.from_dlpack(f)
                enc.write(t)
                ref.write(t.cpu())
        self.assertEqual(enc.final_stats["frames"], 20)
        self.assertEqual(enc.final_stats["device_to_host_bytes"], 20 * 640 * 360 * 3 // 2)
        self.assertEqual(ref.final_stats["device_to_host_bytes"], 0)
        a = [torch.from_dlpack(f.planes[0]).clone() for f in vpipe.decode(gpu_out, device="cpu")]
        b = [torch.from_dlpack(f.planes[0]).clone() for f in vpipe.decode(host_out, device="cpu")]
        self.assertEqual((len(a), len(b)), (20, 20))
        for x, y in zip(a, b):
            self.assertLessEqual((x.int() - y.int()).abs().max().item(), 2)  # luma: rgb_to_yuv vs swscale


if __name__ == "__main__":
    unittest.main()
