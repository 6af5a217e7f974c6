// The transcode's output: the muxer for the output path, written beside its
// target and put in place when finished; its video stream, from the encoder
// opened here; the input's audio and subtitles the container holds, copied
// (the rest noted). Private to the session (transcode.cpp).
#pragma once

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/hdr.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/reencode.hpp"
#include "vpipe/pipeline/session/transcode_files.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"
#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe {

// The output: written beside its target and put in place when finished (StagedOutput).
// Members die in this order: the muxer closes the file before the staging removes
// it, before the watch its I/O context polls, and before `files`, which its last
// closes report to.
struct OutputFile {
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // The encoder's own files are put in place only now: the session frees its encoders
  // (declared after the outputs) first, and they write those files to the end.
  ~OutputFile() {
    if (!side_ready) return;  // unfinished: EncoderSideFiles removes what was begun
    try {
      side.commit();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
    }
  }
  EncoderSideFiles side;             // x264 stats, dump-yuv…: beside their targets until then
  bool side_ready = false;           // the output was finished: commit them
  std::optional<OutputWatch> watch;  // a stream's writes: Ctrl-C ends one that blocks
  MuxerFiles files;                  // the files the muxer opens itself (HLS, DASH segments)
  std::optional<StagedOutput> file;
  UniqueMuxContext ctx;
  std::string path;  // as the user named it

  // A stream output (StagedOutput::stream): after Ctrl-C, a write its reader
  // leaves waiting for 1 s ends the writing (OutputWatch).
  void open(const std::string& target, bool keep_partial, const std::atomic<int>* interrupt) {
    file.emplace(target, keep_partial);
    AVIOInterruptCB* cb = nullptr;
    AVIOInterruptCB stream_cb{};
    if (file->stream() && interrupt) {
      stream_cb = watch.emplace(interrupt, 1.0).callback();
      cb = &stream_cb;
    }
    AVFormatContext* oc = ctx.get();
    AVDictionary* opts = nullptr;  // the allowed protocols only (protocols.hpp)
    set_open_options(&opts, file->write_url(), false);
    const int ret = avio_open2(&oc->pb, file->write_url().c_str(), AVIO_FLAG_WRITE, cb, &opts);
    av_dict_free(&opts);
    if (ret < 0)
      throw input_error(fmt::format("cannot open output '{}': {}", target, av_error_text(ret)));
    if (watch) watch->follow(oc->pb);
    file->opened();
  }

  // Complete (or finalized after Ctrl-C): closed, checked to open, then in place.
  // (AVERROR_EXIT: a stream whose writing stopped at Ctrl-C; what was written stays.)
  void finished() {
    AVFormatContext* oc = ctx.get();
    if (oc && !(oc->oformat->flags & AVFMT_NOFILE))
      if (const int ret = avio_closep(&oc->pb); ret < 0 && ret != AVERROR_EXIT)
        throw input_error(fmt::format("writing '{}': {}", path, av_error_text(ret)));
    // Raw pictures (.yuv, .rgb) say nothing of their size: no reader opens them unaided.
    const bool headerless = oc && std::string_view(oc->oformat->name) == "rawvideo";
    ctx.reset();
    if (file && file->staged() && !headerless) check_it_opens();
    if (file) file->commit();
    side_ready = true;
  }

 private:
  void check_it_opens() const {
    try {
      (void)open_input(file->write_url());
    } catch (const std::exception& e) {
      throw input_error(fmt::format(
          "'{}': the finished output does not open ({}); the file already there, if any, "
          "is left as it was",
          path, e.what()));
    }
  }
};

// Whether the video encoder puts its headers in the container's global header:
// where the container asks for it, except HLS, whose MPEG-TS segments must carry
// them in the stream (the TS muxer adds H.264's from it, but mpeg4's VOL would
// be nowhere in a segment).
[[nodiscard]] inline bool global_video_header(const AVOutputFormat* f) {
  return (f->flags & AVFMT_GLOBALHEADER) != 0 && std::string_view(f->name) != "hls";
}

class TranscodeOutput {
 public:
  struct Source {  // what of the input the output is made from
    AVFormatContext* input;
    AVStream* video;
    int video_index;
    AVRational frame_rate;
    const AVCodecContext* decoder;  // its colour properties go to the encoder
    const Hdr10* hdr10 = nullptr;   // its HDR10 metadata, to the stream and the encoder
    const Cut* cut = nullptr;       // the span kept (--ss, --to…): the chapters follow it
    double clock_shift_s = 0;       // output_clock_shift_s: the chapters move with it
  };
  // Opens the muxer, its streams and its file, and writes the header; returns the video
  // encoder (the session keeps it among its members, in the order they must die). With
  // encode_segments, `o`'s gop and encode_threads become the segments' own.
  UniqueAVCodecContext open(TranscodeOptions& o, const TranscodePlan& plan, const Source& in,
                            const std::atomic<int>* interrupt, TranscodeReport& report);
  // Complete (or finalized after Ctrl-C): closed, checked to open, then in place.
  void finished() { file_.finished(); }

  [[nodiscard]] AVFormatContext* ctx() const { return file_.ctx.get(); }
  [[nodiscard]] const MuxerFiles& files() const { return file_.files; }
  [[nodiscard]] AVStream* video() const { return video_out_; }
  // Input stream → output stream (-1: not copied); empty until opened.
  [[nodiscard]] const std::vector<int>& index() const { return output_index_; }
  // Per output stream, the time base its packets arrive in.
  [[nodiscard]] const std::vector<AVRational>& source_time_bases() const { return source_tb_; }
  // Input stream → its re-encoder (null: copied as it is, or not at all); empty until opened.
  [[nodiscard]] const std::vector<StreamReencoder*>& reencoders() const { return reencoder_of_; }

 private:
  UniqueAVCodecContext add_video(TranscodeOptions& o, const TranscodePlan& plan, const Source& in,
                                 TranscodeReport& report);
  void copy_other_streams(const TranscodeOptions& o, const Source& in, TranscodeReport& report);
  // An audio stream the output re-encodes (--audio, or a codec the container refuses).
  void add_reencoded(const TranscodeOptions& o, unsigned index, AVStream* s,
                     TranscodeReport& report, const std::string& why);
  // Text subtitles the container cannot hold, converted to its text format; false
  // where there is none (bitmaps, MPEG-TS): the caller drops them.
  bool add_converted_subtitles(unsigned index, AVStream* s, TranscodeReport& report,
                               const std::string& why);
  bool copy_attachment(AVStream* s, TranscodeReport& report);
  void copy_chapters(const Source& in, TranscodeReport& report);
  // The output stream of input stream `index`, made by `enc` (its parameters, its time base).
  void add_stream_through(unsigned index, AVStream* s, std::unique_ptr<StreamReencoder> enc,
                          TranscodeReport& report, const std::string& why);

  // The re-encoders die after the demuxer that feeds them (the pipeline, a later member of
  // the session) and before the muxer whose streams their parameters went to.
  std::vector<std::unique_ptr<StreamReencoder>> reencoders_;
  std::vector<StreamReencoder*> reencoder_of_;
  OutputFile file_;
  std::vector<int> output_index_;
  std::vector<AVRational> source_tb_;
  AVStream* video_out_ = nullptr;
};

}  // namespace vpipe
