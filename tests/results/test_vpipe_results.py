"""Unit tests of scripts/vpipe_results' loaders and formatting (issue #42): ranges round a
minimum down and a maximum up, ratios pair runs of one round, a stored median must be its runs',
a block's markers are counted, archived run names parse, the newest run of a kind is by date on
whichever GPU, a dirty build is named so, the
decode-queues rows divide by the probe with as many sessions, the decode-surfaces rows range
over rounds and give each run's surfaces from its reports, and the decode-resize rows group
rounds by decoder threads, and the decode-ab rows pair head and base by round, and the decode-tenbit rows give each stage's busy share, and the decode-phases rows
range each phase's mean over the streams across rounds, a missed ring target names its rows, a smoke is held to its time,
and a decode table pools the rounds of the folder its continues.txt names only where the programs are the same;
an archived run packs to the same bytes each time, reads back as packed, and its summary catches a changed byte
or mode; a summary of another shape, a member named twice and a link are problems named, never a traceback, and
no link is followed; scripts/archive-run refuses the archive, a link, a misnamed run and a README not UTF-8
without changing anything, and removes a run only once its tarball and summary are written."""
import importlib.machinery
import importlib.util
import io
import json
import lzma
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
from unittest import mock

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
from vpipe_results import (archive, cli, common, decode_table, history, integrity, pages, peers, smoke,  # noqa: E402
                           strategies)


class Ranges(unittest.TestCase):
    def test_a_range_rounds_its_minimum_down_and_its_maximum_up(self):
        self.assertEqual(common.span([75.81, 80.2]), "75–81")
        self.assertEqual(common.span([1.234, 1.236], 2), "1.23–1.24")

    def test_one_value_is_rounded_to_the_nearest(self):
        self.assertEqual(common.span([75.81]), "76")
        self.assertEqual(common.span([2.0, 2.0], 1, "×"), "2.0×")

    def test_no_values_say_so(self):
        self.assertEqual(common.span([]), "–")
        self.assertEqual(common.span([None]), "–")

    def test_thousands_are_grouped(self):
        self.assertEqual(common.span([1173.2, 1312.9]), "1,173–1,313")


class Formatting(unittest.TestCase):
    def test_anchor_is_githubs(self):
        self.assertEqual(common.anchor("1. End to end against FFmpeg and PyTorch, 1 and 8 streams"),
                         "1-end-to-end-against-ffmpeg-and-pytorch-1-and-8-streams")
        self.assertEqual(common.anchor("4. Staging: pinned against pageable"), "4-staging-pinned-against-pageable")

    def test_table_has_a_header_a_rule_and_a_row_each(self):
        self.assertEqual(common.table(["a", "b"], [[1, 2]]), ["| a | b |", "|---|---|", "| 1 | 2 |"])


class Peers(unittest.TestCase):
    row = {"streams": 1, "vpipe-pool": {"runs": [{"fps": 300.0}, {"fps": 330.0}]},
           "ffmpeg-cuda": {"runs": [{"fps": 150.0}, {"fps": 165.0}, {"error": "killed"}]}}

    def test_ratios_pair_the_runs_of_one_round(self):
        self.assertEqual(peers.ratios(self.row, "vpipe-pool", "ffmpeg-cuda"), [2.0, 2.0])

    def test_a_failed_run_is_counted_not_dropped(self):
        self.assertEqual(peers.failed(self.row, "ffmpeg-cuda"), 1)

    def test_a_stored_median_that_is_not_its_runs_fails(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "peers", "runs"))
            rows = [{"streams": 1, "ffmpeg-cuda": {"fps": 159.0, "runs": [{"fps": 100.0}] * 3}}]
            json.dump(rows, open(os.path.join(d, "peers", "runs", "peers.json"), "w"))
            suite = mock.Mock(file=lambda *p: os.path.join(d, *p), where=lambda: d)
            with self.assertRaisesRegex(SystemExit, "is not the median of its runs"):
                peers.rows(suite)


class RingTarget(unittest.TestCase):
    @staticmethod
    def staging(ring_4k, met):
        rows = [{"size": "1080p", "direction": "H2D", "raw_pinned_gbps": 50.0, "ring_pinned_gbps": 50.5},
                {"size": "4K", "direction": "H2D", "raw_pinned_gbps": 50.0, "ring_pinned_gbps": ring_4k}]
        return {"staging": rows, "targets": {"ring_90pct": met}}

    def test_a_missed_row_is_named_with_its_share_rounded_down(self):
        line, = strategies.ring_target_lines(self.staging(42.9, False))
        self.assertIn("85–101 %", line)
        self.assertIn("≥ 90 %, missed: 4K H2D (85 %)", line)

    def test_a_met_target_says_so_and_no_target_says_nothing(self):
        self.assertIn("met in every row", strategies.ring_target_lines(self.staging(49.0, True))[0])
        self.assertEqual(strategies.ring_target_lines({"staging": []}), [])


class SmokeTime(unittest.TestCase):
    def test_the_smokes_own_time_is_held_to_six_minutes(self):
        self.assertEqual(smoke.timing("GPU smoke at abc on X, 2026-12-06 10:32 UTC, 360 s"),
                         "within its 6-minute limit")
        self.assertEqual(smoke.timing("GPU smoke at abc on X, 2026-12-06 10:32 UTC, 375 s"),
                         "15 s OVER its 6-minute limit")
        self.assertEqual(smoke.timing("GPU smoke at abc"), "its time is not recorded")


class Blocks(unittest.TestCase):
    def test_deleted_and_copied_markers_are_problems(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(pages, "ROOT", d):
            block = "<!-- generated: x -->\nA\n<!-- /generated: x -->\n"
            for text, times in (("", 0), (block, None), (block * 2, 2)):
                open(os.path.join(d, "f.md"), "w").write(text)
                found = pages.block_problems("f.md", {"x": None})
                self.assertEqual(bool(found), times is not None)
                if times is not None:
                    self.assertIn(f"appears {times} times", found[0])

    def test_a_block_no_generator_writes_is_a_problem(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(pages, "ROOT", d):
            open(os.path.join(d, "f.md"), "w").write("<!-- generated: y -->\nB\n<!-- /generated: y -->\n")
            self.assertIn("no generator writes", pages.block_problems("f.md", {})[0])


class RunNames(unittest.TestCase):
    def test_a_run_name_gives_kind_date_and_commit(self):
        m = history.NAME.match("peers-fair-h200-2026-12-02-b2f5c22")
        self.assertEqual((m.group("kind"), m.group("date"), m.group("commit")), ("peers-fair", "2026-12-02", "b2f5c22"))
        m = history.NAME.match("gpu-smoke-h200-2026-12-02-a5d5cd7-dirty-pre-fix")
        self.assertEqual(m.group("commit"), "a5d5cd7")
        m = history.NAME.match("ci-times-2026-12-01")
        self.assertEqual((m.group("kind"), m.group("commit")), ("ci-times", None))
        m = history.NAME.match("decode-api-h100-2026-12-05-9d08c84")
        self.assertEqual((m.group("kind"), m.group("commit")), ("decode-api", "9d08c84"))

    def test_the_newest_run_of_a_kind_is_by_date_on_whichever_gpu(self):
        with tempfile.TemporaryDirectory() as results:
            for name in ("decode-api-h200-2026-12-04-aaaaaaa", "decode-api-h100-2026-12-05-bbbbbbb",
                         "decode-ab-h200-2026-12-06-ccccccc", "decode-api-h200-2026-12-03-ddddddd"):
                os.mkdir(os.path.join(results, name))
            with mock.patch.object(common, "RESULTS", results):
                newest = common.newest_run("decode-api")
                self.assertEqual(os.path.basename(newest), "decode-api-h100-2026-12-05-bbbbbbb")
                self.assertEqual(common.card(newest), "H100")
                self.assertEqual(os.path.basename(common.newest_run("decode-ab")),
                                 "decode-ab-h200-2026-12-06-ccccccc")
                self.assertIsNone(common.newest_run("decode"))
        self.assertEqual(common.card("ci-times-2026-12-01"), "GPU")

    def test_the_decode_table_is_the_newest_folder_with_clip_rounds(self):
        with tempfile.TemporaryDirectory() as results:
            clips = os.path.join(results, "decode-table-h100-2026-12-05-aaaaaaa")
            later = os.path.join(results, "decode-table-h100-2026-12-06-bbbbbbb")  # long file only
            for folder in (clips, later):
                os.mkdir(folder)
            open(os.path.join(clips, "hevc-1080p-r1.json"), "w").close()
            open(os.path.join(later, "long.jsonl"), "w").close()
            with mock.patch.object(common, "RESULTS", results):
                self.assertEqual(decode_table.newest(), clips)
                self.assertEqual(common.newest_run("decode-table", holding="long.jsonl"), later)
                os.remove(os.path.join(clips, "hevc-1080p-r1.json"))
                self.assertIsNone(decode_table.newest())


class RunCommits(unittest.TestCase):
    def test_a_dirty_build_keeps_its_mark(self):
        with tempfile.TemporaryDirectory() as run:
            for text, want in (("b8f490d\n", "b8f490d"), ("c0b134a1234-dirty\n", "c0b134a-dirty")):
                with open(os.path.join(run, "commit.txt"), "w") as f:
                    f.write(text)
                self.assertEqual(common.run_commit(run), want)


class DecodeQueues(unittest.TestCase):
    @staticmethod
    def _stream(fps, wall, decode, blocked, sink):
        return {"steady_fps": fps, "wall_s": wall,
                "stages": [{"name": "decode", "busy_s": decode}, {"name": "null", "busy_s": sink}],
                "queues": [{"name": "decode→", "producer_blocked_s": blocked}]}

    def test_rows_go_by_streams_then_depth_and_divide_by_the_same_session_count(self):
        with tempfile.TemporaryDirectory() as run:
            probe = lambda fps14, fps21: {"probe": [{"sessions": 14, "steady_fps": fps14},
                                                   {"sessions": 21, "steady_fps": fps21}]}
            reps = {"q8-s14": [self._stream(500, 2.0, 1.0, 0.5, 0.2)] * 2,
                    "q2-s21": [self._stream(300, 4.0, 2.0, 0.0, 1.0)] * 3,
                    "q32-s14": [self._stream(400, 2.0, 1.0, 0.0, 0.0)] * 2}
            files = {"hevc-1080p-raw.json": probe(2000, 1000), "hevc-1080p-ffmpeg.json": probe(1000, 900)}
            files.update({f"hevc-1080p-{k}.json": {"streams": v, "aggregate": {"failed": 0}}
                          for k, v in reps.items()})
            for name, data in files.items():
                with open(os.path.join(run, name), "w") as f:
                    json.dump(data, f)
            rows = decode_table._queues_rows(run, "hevc-1080p", "HEVC", "1080p")
        self.assertEqual([r[1:4] for r in rows], [["14", "8", "1,000"], ["14", "32", "800"], ["21", "2", "900"]])
        self.assertEqual(rows[0][4:10], ["1.00", "0.50", "0.50", "0.25", "0.10", "0"])
        self.assertEqual(rows[2][4:6], ["1.00", "0.90"])


class DecodeThreads(unittest.TestCase):
    def test_errors_and_failures_are_counted_over_every_file(self):
        with tempfile.TemporaryDirectory() as run:
            for name, errors, failed in (("hevc-1080p-r1-raw", 0, 0), ("hevc-1080p-r1-t2", 3, 1)):
                with open(os.path.join(run, name + ".json"), "w") as f:
                    json.dump({"probe": [{"sessions": 14, "frames": 16800, "errors": errors}],
                               "segments": [{"decode_sessions": 1, "frames": 1200, "decode_errors": 0}],
                               "streams": [{"streams": 21, "frames": 25000, "failed": failed}]}, f)
            text = decode_table._threads_losses(run)
        self.assertIn("4 probe and one-file runs, 3 decode errors", text)
        self.assertIn("2 --streams runs, 1 failed", text)
        self.assertIn("1,190, 1,200", text)  # a stream short of its frames shows


class DecodeApi(unittest.TestCase):
    def test_each_api_is_ranged_over_rounds_and_divided_by_its_own_rounds_raw_probe(self):
        def bench(one, fourteen, s14, s21, seg):
            return {"probe": [{"sessions": 1, "steady_fps": one}, {"sessions": 14, "steady_fps": fourteen}],
                    "streams": [{"streams": 14, "steady_fps": s14}, {"streams": 21, "steady_fps": s21}],
                    "segments": [{"decode_sessions": 1, "steady_fps": seg}]}
        files = {"hevc-1080p-r1-raw": bench(1000, 8000, 0, 0, 0),
                 "hevc-1080p-r2-raw": bench(1000, 10000, 0, 0, 0),
                 "hevc-1080p-r1-hwaccel": bench(900, 7200, 7200, 7600, 880),
                 "hevc-1080p-r2-hwaccel": bench(1000, 9000, 9000, 9500, 990),
                 "hevc-1080p-r1-cuvid": bench(1000, 8000, 8000, 8000, 1000)}  # r2 missing: left out
        with tempfile.TemporaryDirectory() as run:
            for name, data in files.items():
                with open(os.path.join(run, name + ".json"), "w") as f:
                    json.dump(data, f)
            rows = decode_table._api_rows(run, "hevc-1080p", "HEVC 8-bit", "1080p")
        self.assertEqual(rows, [
            ["HEVC 8-bit 1080p", "raw NVCUVID", "1,000 / 8,000–10,000", "–", "–"],
            ["HEVC 8-bit 1080p", "hwaccel", "900–1,000 (0.90–1.00) / 7,200–9,000 (0.90)", "880–990",
             "7,200–9,000 (0.90) / 7,600–9,500 (0.95)"],
            ["HEVC 8-bit 1080p", "cuvid", "1,000 (1.00) / 8,000 (1.00)", "1,000", "8,000 (1.00) / 8,000 (1.00)"]])


class DecodeTableLineage(unittest.TestCase):
    def _folders(self, results, newer, older_name, round_in_newer="r2"):
        older = os.path.join(results, older_name)
        for folder, rnd in ((older, "r1"), (newer, round_in_newer)):
            os.makedirs(folder)
            with open(os.path.join(folder, f"hevc-1080p-{rnd}.json"), "w") as f:
                json.dump({"round": rnd}, f)
            with open(os.path.join(folder, "commit.txt"), "w") as f:
                f.write(os.path.basename(folder).rsplit("-", 1)[1] + "\n")
        with open(os.path.join(newer, "continues.txt"), "w") as f:
            f.write(older_name + "\n")

    def test_rounds_come_from_the_named_folder_first(self):
        with tempfile.TemporaryDirectory() as results, mock.patch.object(decode_table, "RESULTS", results), \
                mock.patch.object(history, "git", return_value=""):
            newer = os.path.join(results, "decode-table-h100-2026-12-05-bbbbbbb")
            self._folders(results, newer, "decode-table-h100-2026-12-05-aaaaaaa")
            self.assertEqual([d["round"] for d in decode_table._rounds(newer, "hevc-1080p")], ["r1", "r2"])
            self.assertEqual(decode_table.continuation_problems(), [])
            self.assertIn("with the rounds of", decode_table._pooled(newer))

    def test_another_card_a_clash_or_changed_code_is_a_problem(self):
        with tempfile.TemporaryDirectory() as results, mock.patch.object(decode_table, "RESULTS", results), \
                mock.patch.object(history, "git", return_value="apps/commands/transcode.cpp"):
            newer = os.path.join(results, "decode-table-h100-2026-12-05-bbbbbbb")
            self._folders(results, newer, "decode-table-h200-2026-12-04-aaaaaaa", round_in_newer="r1")
            found = " | ".join(decode_table.continuation_problems())
        self.assertIn("ran on the H200", found)
        self.assertIn("both folders hold hevc-1080p-r1.json", found)
        self.assertIn("apps/commands/transcode.cpp changed", found)


class EncoderBound(unittest.TestCase):
    def test_each_row_ranges_its_rounds_and_its_cpu_seconds_where_recorded(self):
        runs = [{"decode_sessions": "1", "round": 1, "whole_s": 20.0, "user_s": 30.0, "sys_s": 1.0},
                {"decode_sessions": "auto", "round": 1, "whole_s": 25.0, "user_s": 29.5, "sys_s": 1.0},
                {"decode_sessions": "1", "round": 2, "whole_s": 18.0, "user_s": 29.0, "sys_s": 1.0},
                {"decode_sessions": "auto", "round": 2, "whole_s": 18.0, "user_s": 30.0, "sys_s": 1.2},
                {"decode_sessions": "4", "round": 2, "whole_s": 24.0}]
        with tempfile.TemporaryDirectory() as run:
            os.mkdir(os.path.join(run, "encoder-bound"))
            with open(os.path.join(run, "encoder-bound", "runs.jsonl"), "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in runs)
            for r in runs:
                with open(os.path.join(run, "encoder-bound", f"{r['decode_sessions']}-{r['round']}.json"), "w") as f:
                    json.dump({"latency_ms": {"p50": r["whole_s"] * 10}}, f)
            rows = decode_table._encoder_bound_rows(run)
        self.assertEqual(rows, [["1", "18.0–20.0 s", "1.00×", "180–200 ms", "30.0–31.0 s"],
                                ["auto", "18.0–25.0 s", "0.80–1.00×", "180–250 ms", "30.5–31.2 s"],
                                ["4", "24.0 s", "0.75×", "240 ms", "not recorded"]])

    def test_cpu_per_wall_second_is_said_only_where_both_configurations_record_it(self):
        runs = [{"decode_sessions": "1", "round": 1, "whole_s": 20.0, "user_s": 21.0, "sys_s": 1.0},
                {"decode_sessions": "auto", "round": 1, "whole_s": 16.0, "user_s": 16.5, "sys_s": 0.5},
                {"decode_sessions": "4", "round": 1, "whole_s": 10.0, "user_s": 30.0, "sys_s": 2.0}]
        self.assertEqual(decode_table._cpu_per_wall(runs),
                         " CPU seconds per wall second: one session 1.10, auto 1.06; the same job "
                         "took 17.0–22.0 s of CPU from run to run.")
        self.assertEqual(decode_table._cpu_per_wall([{k: v for k, v in r.items() if k != "user_s"}
                                                     if r["decode_sessions"] == "auto" else r for r in runs]), "")


class DecodeSurfaces(unittest.TestCase):
    def test_rounds_give_ranges_and_the_build_default_comes_first(self):
        def rep(fps, whole, surfaces, failed=0):
            return {"aggregate": {"fps_total": whole, "failed": failed},
                    "streams": [{"steady_fps": fps, "memory": {"nvdec_pool": {"decode_surfaces": surfaces}}}] * 2}
        files = {"raw.json": {"probe": [{"steady_fps": 1000.0}]},
                 "probe-h1-r1.json": {"probe": [{"steady_fps": 950.0, "errors": 0}]},
                 "probe-h1-r2.json": {"probe": [{"steady_fps": 970.0, "errors": 2}]},
                 "probe-h27-r1.json": {"probe": [{"steady_fps": 800.0, "errors": 0}]},
                 "tr-q8-h5-r1.json": rep(450, 600, 15), "tr-q8-h5-r2.json": rep(460, 610, 15, 1),
                 "tr-q8-hdef-r1.json": rep(400, 500, 21)}
        with tempfile.TemporaryDirectory() as run:
            for name, data in files.items():
                with open(os.path.join(run, name), "w") as f:
                    json.dump(data, f)
            rows, raw = decode_table._surfaces_rows(run)
        self.assertEqual(raw, 1000.0)
        self.assertEqual([r[2] for r in rows], ["1", "27", "queue depth + 3", "5"])
        self.assertEqual(rows[0][5:], ["950–970", "0.95–0.97", "2"])
        self.assertEqual(rows[2][3:], ["21", "500", "800", "0.80", "0 failed"])
        self.assertEqual(rows[3][3:], ["15", "600–610", "900–920", "0.90–0.92", "1 failed"])


class DecodeResize(unittest.TestCase):
    def test_threads_group_the_rounds_and_failures_are_summed(self):
        def run_of(fps14, fps21, failed=0):
            return {"streams": [{"streams": 14, "steady_fps": fps14, "failed": 0},
                                {"streams": 21, "steady_fps": fps21, "failed": failed}]}
        files = {"hevc10-1080p-t1-r1.json": run_of(5100.2, 5300), "hevc10-1080p-t1-r2.json": run_of(5400, 5250),
                 "hevc10-1080p-t2-r1.json": run_of(6000, 5500, 1)}
        with tempfile.TemporaryDirectory() as run:
            for name, data in files.items():
                with open(os.path.join(run, name), "w") as f:
                    json.dump(data, f)
            rows = decode_table._resize_rows(run)
        self.assertEqual(rows, [["HEVC 10-bit 1080p", "1", "14/21", "5,100–5,400 / 5,250–5,300", "2", "0"],
                                ["HEVC 10-bit 1080p", "2", "14/21", "6,000 / 5,500", "1", "1"]])


class DecodeAb(unittest.TestCase):
    def test_rounds_pair_head_with_base_and_a_round_without_both_is_left_out(self):
        def run_of(fps14, fps21, failed=0):
            return {"streams": [{"streams": 14, "steady_fps": fps14, "failed": 0},
                                {"streams": 21, "steady_fps": fps21, "failed": failed}]}
        files = {"base-r1.json": run_of(1000, 2000), "head-r1.json": run_of(1100, 2000, 1),
                 "base-r2.json": run_of(1000, 1000), "head-r2.json": run_of(1200.4, 1500),
                 "head-r3.json": run_of(9000, 9000)}
        with tempfile.TemporaryDirectory() as run:
            os.mkdir(os.path.join(run, "ab-resize-hevc-1080p"))
            for name, data in files.items():
                with open(os.path.join(run, "ab-resize-hevc-1080p", name), "w") as f:
                    json.dump(data, f)
            rows = decode_table._ab_rows(run)
        self.assertEqual(rows, [["HEVC 8-bit 1080p", "14", "1,000", "1,100–1,201", "1.10–1.21", "2", "0"],
                                ["HEVC 8-bit 1080p", "21", "1,000–2,000", "1,500–2,000", "1.00–1.50", "2", "1"]])


class StageRunAb(unittest.TestCase):
    def test_each_chain_names_its_filters_and_pairs_its_own_rounds(self):
        def run_of(fps, vf):
            return {"filters": vf, "streams": [{"streams": 14, "steady_fps": fps, "failed": 0}]}
        folders = {"ab-resize-hevc10-1080p": {"base-r1.json": run_of(1000, "resize=1280x720"),
                                              "head-r1.json": run_of(1200, "resize=1280x720")},
                   "ab-resize-blur-hevc-1080p": {"base-r1.json": run_of(500, "resize=64x64,blur"),
                                                 "head-r1.json": run_of(600, "resize=64x64,blur"),
                                                 "base-r2.json": run_of(400, "resize=64x64,blur")}}
        with tempfile.TemporaryDirectory() as run:
            for folder, files in folders.items():
                os.mkdir(os.path.join(run, folder))
                for name, data in files.items():
                    with open(os.path.join(run, folder, name), "w") as f:
                        json.dump(data, f)
            rows = decode_table._ab_rows(run, ("resize", "resize-blur"))
        self.assertEqual(rows, [["HEVC 10-bit 1080p, resize=1280x720", "14", "1,000", "1,200", "1.20", "1", "0"],
                                ["HEVC 8-bit 1080p, resize=64x64,blur", "14", "500", "600", "1.20", "1", "0"]])


class DecodeStages(unittest.TestCase):
    def test_graphs_off_and_on_sum_the_streams_and_range_over_rounds(self):
        def report(*fps, failed=0):
            return {"streams": [{"steady_fps": x} for x in fps], "aggregate": {"failed": failed}}
        files = {"hevc-1080p-raw.json": {"probe": [{"sessions": 14, "steady_fps": 8000},
                                                   {"sessions": 21, "steady_fps": 9000}]},
                 "hevc-1080p-goff-s14-r1.json": report(100, 200),
                 "hevc-1080p-goff-s14-r2.json": report(150, 200),
                 "hevc-1080p-goff-s21-r1.json": report(400),
                 "hevc-1080p-gon-s14-r1.json": report(500, failed=1),
                 "hevc-1080p-gon-s21-r1.json": report(600)}
        with tempfile.TemporaryDirectory() as run:
            for name, data in files.items():
                with open(os.path.join(run, name), "w") as f:
                    json.dump(data, f)
            rows = decode_table._stages_rows(run)
        self.assertEqual(rows, [["HEVC 8-bit 1080p", "8,000 / 9,000", "300–350 / 400", "500 / 600", "1"]])


class DecodePhases(unittest.TestCase):
    def test_each_phase_is_the_mean_over_the_streams_lines(self):
        log = ("vpipe: stream 1 → null\n"
               "[warning] decode phases: 1200 frames, ms a frame: send 2.000 receive 0.010 copy 0.100 emit 0.004\n"
               "[warning] decode phases: 1200 frames, ms a frame: send 1.000 receive 0.030 copy 0.300 emit 0.002\n")
        with tempfile.TemporaryDirectory() as run:
            path = os.path.join(run, "x.log")
            with open(path, "w") as f:
                f.write(log)
            means = decode_table._log_phase_means(path)
        self.assertEqual([round(m, 3) for m in means], [1.5, 0.02, 0.2, 0.003])

    def test_reports_phases_are_meant_over_streams_and_ranged_over_rounds(self):
        def report(fps, *sends):
            return {"aggregate": {"failed": 0}, "streams": [
                {"steady_fps": fps, "stages": [{"name": "decode", "busy_ms_per_item": 2.0,
                                                "phases_ms_per_item": {"send": x, "receive": 0.01, "copy": 0.1}}]}
                for x in sends]}
        files = {"hevc-1080p-s14-r1.json": report(500, 1.0, 3.0),  # 2 streams: mean send 2.0
                 "hevc-1080p-s14-r2.json": report(600, 4.0),
                 "hevc-1080p-s14-resize-r1.json": report(100, 9.0)}
        with tempfile.TemporaryDirectory() as run:
            for name, data in files.items():
                with open(os.path.join(run, name), "w") as f:
                    json.dump(data, f)
            rows = decode_table._phases_rows(run)
        self.assertEqual(rows, [
            ["HEVC 8-bit 1080p", "14", "none", "600–1,000", "2.00", "2.000–4.000", "0.010", "0.100", "–"],
            ["HEVC 8-bit 1080p", "14", "resize=1280x720", "100", "2.00", "9.000", "0.010", "0.100", "–"]])


class DecodeTenbit(unittest.TestCase):
    def test_each_stage_gives_its_busy_share_over_the_streams(self):
        def stream(wall, decode, resize):
            return {"wall_s": wall,
                    "stages": [{"name": "decode", "busy_s": decode, "busy_ms_per_item": decode},
                               {"name": "cuda:resize", "busy_s": resize, "busy_ms_per_item": 2 * resize,
                                "gpu_ms_per_item": 0.05 * resize}]}
        report = {"streams": [stream(2.0, 1.0, 1.8), stream(4.0, 3.0, 1.0)], "aggregate": {}}
        with tempfile.TemporaryDirectory() as run:
            with open(os.path.join(run, "tr14.json"), "w") as f:
                json.dump(report, f)
            rows, _ = decode_table._stage_rows(os.path.join(run, "tr14.json"))
        self.assertEqual(rows, [["decode", "0.50", "0.62", "0.75", "2.00", "–"],
                                ["cuda:resize", "0.25", "0.57", "0.90", "2.80", "0.070"]])


class ArchivedRuns(unittest.TestCase):
    RUN = "probe-h100-2026-12-07-abcdef0"
    FILES = {f"{RUN}/README.md": (b"# A probe, on an H100.\nMore.\n", 0o644),
             f"{RUN}/data/r1.json": (b'{"fps": 1}', 0o644), f"{RUN}/measure.sh": (b"#!/bin/sh\n", 0o755)}

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        for module in (common, archive):
            patch = mock.patch.object(module, "ARCHIVE", self.dir.name)
            patch.start()
            self.addCleanup(patch.stop)
        common.archived_members.cache_clear()
        self.addCleanup(common.archived_members.cache_clear)

    def test_the_same_files_pack_to_the_same_bytes_named_in_order_owned_by_no_one_at_time_0(self):
        packed = archive.tarball(self.FILES)
        self.assertEqual(packed, archive.tarball(dict(reversed(list(self.FILES.items())))))
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:xz") as t:
            members = t.getmembers()
        self.assertEqual([m.name for m in members], sorted(self.FILES))
        self.assertEqual({(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members}, {(0, 0, 0, "", "")})
        self.assertEqual({m.name: m.mode for m in members}, {n: mode for n, (_, mode) in self.FILES.items()})

    def test_a_run_reads_back_as_packed_and_its_summary_describes_it(self):
        archive.write(self.RUN, self.FILES)
        self.assertEqual(common.archived_runs(), [self.RUN])
        self.assertEqual(common.archived(self.RUN, mark=False), {n: d for n, (d, _) in self.FILES.items()})
        summary = common.archived_summary(self.RUN)
        self.assertEqual((summary["title"], summary["commit"], summary["card"]), ("A probe, on an H100", "abcdef0", "h100"))
        self.assertEqual(history.what(self.RUN), "A probe, on an H100")
        self.assertEqual(archive.problems(), [])

    def test_a_changed_byte_a_lost_summary_and_a_folder_left_unpacked_are_problems(self):
        archive.write(self.RUN, {**self.FILES, f"{self.RUN}/data/r1.json": (b'{"fps": 2}', 0o644)})
        with open(os.path.join(self.dir.name, self.RUN + ".json"), "w") as f:
            f.write(archive.summary_text(archive.summary_of(self.RUN, self.FILES)))
        os.makedirs(os.path.join(self.dir.name, "other-h100-2026-12-07-1234567"))
        with open(os.path.join(self.dir.name, "gone-h100-2026-12-07-7654321.json"), "w") as f:
            f.write("{}")
        found = " | ".join(archive.problems())
        self.assertIn(f"{self.RUN}/data/r1.json is not the file", found)
        self.assertIn("other-h100-2026-12-07-1234567 is not packed", found)
        self.assertIn("gone-h100-2026-12-07-7654321.json: no gone-h100-2026-12-07-7654321.tar.xz beside it", found)


def got(path):
    with open(path, "rb") as f:
        return f.read()


def put(path, data):
    with open(path, "wb") as f:
        f.write(data)


class TempTree(unittest.TestCase):
    """A repository of its own: ROOT/docs/results/archive/ holding RUN, packed; every module's paths
    point there."""
    RUN = ArchivedRuns.RUN
    FILES = ArchivedRuns.FILES

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.root = os.path.realpath(self.dir.name)
        self.results = os.path.join(self.root, "docs", "results")
        self.archive = os.path.join(self.results, "archive")
        os.makedirs(self.archive)
        paths = {"ROOT": self.root, "RESULTS": self.results, "ARCHIVE": self.archive}
        for module in (common, archive, integrity, *self.modules()):
            for name, value in paths.items():
                if hasattr(module, name):
                    patch = mock.patch.object(module, name, value)
                    patch.start()
                    self.addCleanup(patch.stop)
        common.archived_members.cache_clear()
        self.addCleanup(common.archived_members.cache_clear)
        archive.write(self.RUN, self.FILES)

    def modules(self):
        return []

    def path(self, *parts):
        return os.path.join(self.results, *parts)

    def tree(self):
        """Every path under ROOT but .git: (kind, mode, bytes or link target)."""
        out = {}
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for n in dirs + names:
                p = os.path.join(folder, n)
                st = os.lstat(p)
                what = os.readlink(p) if os.path.islink(p) else got(p) if os.path.isfile(p) else None
                out[os.path.relpath(p, self.root)] = (st.st_mode, what)
        return out


class SummariesAreCheckedBeforeRead(TempTree):
    """Each way a summary can be other than scripts/archive-run writes it, made from a good one: a
    problem naming the file and what is wrong, found before anything reads the summary."""
    EDITS = [  # (what, edit of the summary's text or of its parsed JSON, what the problem says)
        ("cut short", lambda t: t[:1], "not JSON"),
        ("empty", lambda t: b"", "not JSON"),
        ("not UTF-8", lambda t: t.replace(b"A probe", b"A pr\xf6be"), "not UTF-8"),
        ("a list", lambda d: [d], "the summary is [{"),
        ("files a number", lambda d: {**d, "files": 5}, "the summary's files is 5, not a list"),
        ("a title a number", lambda d: {**d, "title": 5}, "the summary's title is 5, not text or null"),
        ("a key more", lambda d: {**d, "size": 1}, "the summary has size, no field of a summary"),
        ("a key less", lambda d: {k: v for k, v in d.items() if k != "card"}, "the summary lacks card"),
        ("a name a list", lambda d: {**d, "files": [{**d["files"][0], "name": ["a"]}] + d["files"][1:]},
         'file 1\'s name is ["a"], not text'),
        ("a file without its mode", lambda d: {**d, "files": [{k: v for k, v in f.items() if k != "mode"}
                                                              for f in d["files"]]}, "file 1 lacks mode"),
        ("a size true", lambda d: {**d, "files": [{**d["files"][0], "bytes": True}] + d["files"][1:]},
         "file 1's bytes is true, not a whole number"),
        ("a file listed twice", lambda d: {**d, "files": d["files"] + d["files"][:1]},
         f"it lists {ArchivedRuns.RUN}/README.md twice"),
    ]

    def test_each_is_a_problem_named_and_nothing_reads_it(self):
        summary = self.path("archive", self.RUN + ".json")
        good = got(summary)
        for what, edit, says in self.EDITS:
            with self.subTest(what):
                text = edit(good) if what in ("cut short", "empty", "not UTF-8") else \
                    json.dumps(edit(json.loads(good))).encode()
                put(summary, text)
                want = f"docs/results/archive/{self.RUN}.json: "
                found = archive.summary_problems()
                self.assertEqual(len(found), 1, found)
                self.assertTrue(found[0].startswith(want), found[0])
                self.assertIn(says, found[0])
                self.assertIn(found[0], cli.unsafe_problems())
                self.assertEqual(archive.problems(), found)  # the check's own pass names it too, no traceback
        put(summary, good)
        self.assertEqual(archive.summary_problems() + archive.problems(), [])


class MembersAreCheckedByModeAndName(TempTree):
    def test_a_changed_mode_is_a_problem(self):
        script = f"{self.RUN}/measure.sh"
        put(self.path("archive", self.RUN + ".tar.xz"),
            archive.tarball({**self.FILES, script: (self.FILES[script][0], 0o644)}))
        self.assertEqual(archive.problems(), [
            f"{self.RUN}.tar.xz: {script} is not the file docs/results/archive/{self.RUN}.json lists "
            "(its mode differs: 0644 packed, 0755 listed)"])

    def test_a_member_named_twice_is_a_problem(self):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as t:
            for data in (b"first", b"second"):
                info = tarfile.TarInfo(f"{self.RUN}/README.md")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        put(self.path("archive", self.RUN + ".tar.xz"), lzma.compress(raw.getvalue()))
        self.assertEqual(archive.problems(), [f"docs/results/archive/{self.RUN}.tar.xz holds {self.RUN}/README.md "
                                              "twice (tar -x would keep the later one only)"])


class LinksAreNamedNotFollowed(TempTree):
    LINKS = {"archive/etcdir": "/etc", "archive/dangling": "nowhere",
             "archive/other-h100-2026-12-07-1234567.tar.xz": ArchivedRuns.RUN + ".tar.xz",
             "run-h100-2026-12-07-7654321/inputs": "/etc", "run-h100-2026-12-07-7654321/log.txt": "../../../x"}

    def test_each_link_is_one_problem_and_nothing_reads_through_it(self):
        os.makedirs(self.path("run-h100-2026-12-07-7654321"))
        put(self.path("run-h100-2026-12-07-7654321", "data.json"), b"{}")
        for link, target in self.LINKS.items():
            os.symlink(target, self.path(link))
        found = integrity.odd_entries()
        self.assertEqual([p.split(" ")[0] for p in found], sorted(f"docs/results/{n}" for n in self.LINKS))
        self.assertTrue(all(" is a link: " in p for p in found), found)
        self.assertEqual(cli.unsafe_problems(), found)
        self.assertEqual(archive.problems(), [])  # no run, no advice to pack it, nothing unpacked
        self.assertEqual([n for n, _ in integrity.run_folders()], ["run-h100-2026-12-07-7654321", self.RUN])
        self.assertEqual(list(integrity.folder_files(*next(integrity.run_folders()))), ["data.json"])


def load_archive_run():
    loader = importlib.machinery.SourceFileLoader("archive_run", os.path.join(SCRIPTS, "archive-run"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("archive_run", loader))
    loader.exec_module(module)
    return module


class ArchiveRunRefuses(TempTree):
    """Each refusal leaves the tree as it was, byte for byte; a run is removed only once written."""
    NEW = "probe-h200-2026-12-08-1234567"

    def modules(self):
        self.script = load_archive_run()
        return [self.script]

    def setUp(self):
        super().setUp()
        os.makedirs(self.path(self.NEW, "data"))
        for name, text in (("README.md", b"# A new run.\n"), ("data/r1.json", b"{}"), ("commit.txt", b"1234567\n")):
            put(self.path(self.NEW, name), text)

    def refused(self, says, *args):
        before = self.tree()
        with self.assertRaises(SystemExit) as e:
            self.script.main([self.path(a) for a in args])
        self.assertIn(says, str(e.exception.code))
        self.assertIn("nothing was changed", str(e.exception.code))
        self.assertEqual(self.tree(), before)

    def test_the_archive_and_what_is_in_it_are_refused(self):
        self.refused("is in docs/results/archive/, archived already", "archive")
        self.refused("is in docs/results/archive/", "archive/")
        self.refused("is in docs/results/archive/", f"archive/{self.RUN}.json", f"archive/{self.RUN}.tar.xz")
        self.refused("is in docs/results/archive/", f"archive/{self.RUN}.tar.xz")
        os.makedirs(self.path("archive", self.NEW))
        self.refused("is in docs/results/archive/", f"archive/{self.NEW}")
        self.refused("is not a run of docs/results/", f"{self.NEW}/data")
        self.refused("is not a run of docs/results/", ".")

    def test_a_name_of_another_form_a_link_and_a_readme_not_utf8_are_refused(self):
        os.rename(self.path(self.NEW), self.path("probe run-h200-2026-12-08-1234567"))
        self.refused("'probe run-h200-2026-12-08-1234567' is not a run's name: KIND-[CARD-]DATE",
                     "probe run-h200-2026-12-08-1234567")
        os.rename(self.path("probe run-h200-2026-12-08-1234567"), self.path(self.NEW))
        os.symlink("..", self.path(self.NEW, "data", "up"))
        self.refused(f"{self.NEW}/data/up is a link", self.NEW)
        os.remove(self.path(self.NEW, "data", "up"))
        os.symlink(self.NEW, self.path("linked-h200-2026-12-08-1234567"))
        self.refused("linked-h200-2026-12-08-1234567 is a link", "linked-h200-2026-12-08-1234567")
        os.remove(self.path("linked-h200-2026-12-08-1234567"))
        put(self.path(self.NEW, "README.md"), b"# A r\xe9sum\xe9 of a run.\n")
        self.refused(f"{self.NEW}/README.md is not UTF-8", self.NEW)

    def test_a_failed_write_leaves_the_run_and_no_part_of_its_archive(self):
        before = self.tree()
        replace = os.replace
        def second_fails(src, dst):
            if dst.endswith(".json"):
                raise OSError(28, "No space left on device")
            replace(src, dst)
        with mock.patch.object(archive.os, "replace", second_fails), self.assertRaises(OSError):
            self.script.main([self.path(self.NEW)])
        self.assertEqual(self.tree(), before)

    def test_in_git_the_run_is_removed_and_its_archive_staged_once_written(self):
        git = lambda *a: subprocess.run(["git", "-C", self.root, *a], capture_output=True, text=True, check=True).stdout
        git("init", "-q")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0")
        git("add", ".")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "runs")
        self.assertEqual(self.script.main([self.path(self.NEW)]), 0)
        self.assertFalse(os.path.exists(self.path(self.NEW)))
        self.assertEqual(sorted(git("status", "--porcelain").splitlines()), sorted(
            [f"A  docs/results/archive/{self.NEW}{ext}" for ext in (".json", ".tar.xz")] +
            [f"D  docs/results/{self.NEW}/{n}" for n in ("README.md", "commit.txt", "data/r1.json")]))
        self.assertEqual(archive.problems(), [])
        self.assertEqual(common.archived_summary(self.NEW)["title"], "A new run")


if __name__ == "__main__":
    unittest.main()
