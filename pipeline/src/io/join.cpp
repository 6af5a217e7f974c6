#include "vpipe/pipeline/io/join.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

extern "C" {
#include <libavformat/avformat.h>
}

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/audio_copy.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/io/stream_facts.hpp"

namespace vpipe {

namespace {

int video_stream_of(AVFormatContext* in, const std::string& path) {
  const int v = av_find_best_stream(in, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (v < 0) throw input_error(fmt::format("{}: no video stream", path));
  return v;
}

// The parameters a part's packets depend on: the output's. `headers`: the request gives the
// output's codec header (every part's parameter sets), so the parts' own may differ.
bool same_stream(const AVCodecParameters* a, const AVCodecParameters* b, bool headers) {
  return a->codec_id == b->codec_id && a->width == b->width && a->height == b->height &&
         a->format == b->format &&
         (headers || (a->extradata_size == b->extradata_size &&
                      (a->extradata_size == 0 ||
                       std::memcmp(a->extradata, b->extradata,
                                   static_cast<std::size_t>(a->extradata_size)) == 0)));
}

// One part's video packets, in decode order: its span (JoinPart), moved by its shift and in
// the output's time base.
class PartReader {
 public:
  PartReader(const JoinPart& part, AVRational out_tb)
      : part_(part),
        in_(open_input(part.path)),
        v_(video_stream_of(in_.get(), part.path)),
        out_tb_(out_tb) {
    const AVStream* s = in_->streams[v_];
    shift_ = static_cast<std::int64_t>(std::llround(part.shift_s / av_q2d(s->time_base)));
    // From a keyframe a second or more before the span, its packets skipped: a demuxer that
    // guesses decode times from the reordering (Matroska, NUT) has none for the first few
    // packets it reads after a seek.
    if (part.from_pts)
      seek_before_or_start(in_, part.path, v_,
                           static_cast<double>(*part.from_pts) * av_q2d(s->time_base) - 1.0);
  }
  [[nodiscard]] AVFormatContext* input() const { return in_.get(); }
  [[nodiscard]] const AVStream* stream() const { return in_->streams[v_]; }

  // The next packet of the span into `pkt`; false at its end.
  bool next(AVPacket* pkt) {
    while (!done_ && av_read_frame(in_.get(), pkt) >= 0) {
      if (pkt->stream_index == v_ && in_span(*pkt)) {
        if (pkt->pts != AV_NOPTS_VALUE) pkt->pts += shift_;
        if (pkt->dts != AV_NOPTS_VALUE) pkt->dts += shift_;
        av_packet_rescale_ts(pkt, stream()->time_base, out_tb_);
        return true;
      }
      av_packet_unref(pkt);
    }
    return false;
  }

 private:
  bool in_span(const AVPacket& p) {
    if (part_.from_pts && !started_) started_ = p.pts == *part_.from_pts;
    if (part_.until_pts && p.pts == *part_.until_pts) done_ = true;
    return (!part_.from_pts || started_) && !done_;
  }
  const JoinPart& part_;
  UniqueDemuxContext in_;
  int v_;
  AVRational out_tb_;
  std::int64_t shift_ = 0;
  bool started_ = false, done_ = false;
};

// The output being written: declared in the order it must die (the muxer closes its file
// before the staged file removes an unfinished one; the audio source is read through it).
struct JoinedFile {
  std::optional<StagedOutput> file;
  UniqueMuxContext out;
  std::optional<AudioCopy> audio;
  AVStream* video = nullptr;
};

// The video stream as `from`'s: parameters (the request's header if it gives one), codec tag
// where the container takes it, rotation, language and flags.
void add_video(JoinedFile& j, const AVStream* from, const std::vector<std::uint8_t>& headers) {
  j.video = avformat_new_stream(j.out.get(), nullptr);
  AVCodecParameters* par = j.video->codecpar;
  av_check(avcodec_parameters_copy(par, from->codecpar), "video parameters");
  if (!headers.empty()) {
    av_freep(&par->extradata);
    par->extradata =
        static_cast<std::uint8_t*>(av_mallocz(headers.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!par->extradata) throw std::bad_alloc();
    std::memcpy(par->extradata, headers.data(), headers.size());
    par->extradata_size = static_cast<int>(headers.size());
  }
  keep_codec_tag(from->codecpar, j.video, j.out->oformat);
  j.video->time_base = from->time_base;
  j.video->avg_frame_rate = from->avg_frame_rate;
  j.video->r_frame_rate = from->r_frame_rate;
  j.video->disposition = from->disposition;
  av_dict_copy(&j.video->metadata, from->metadata, 0);
  copy_display_matrix(from, j.video);
}

void open_joined(JoinedFile& j, const JoinRequest& r, const AVFormatContext* from_part,
                 const AVStream* from, JoinResult& result) {
  AVFormatContext* raw = nullptr;
  const std::string net = network_output_format(r.output);  // "-": MPEG-TS, as a transcode's
  av_check(avformat_alloc_output_context2(&raw, nullptr, net.empty() ? nullptr : net.c_str(),
                                          r.output.c_str()),
           r.output);
  j.out.reset(raw);
  add_video(j, from, r.headers);
  if (!r.audio_from.empty())
    j.audio.emplace(open_input(r.audio_from), raw, r.output, r.audio_start_s, r.every_audio_track,
                    r.audio_end_s.has_value());
  result.audio_streams = static_cast<int>(raw->nb_streams) - 1;
  if (r.metadata) {
    av_dict_copy(&raw->metadata, from_part->metadata, 0);
    result.chapters = copy_chapters(from_part, raw, r.chapters_from_s, r.chapters_until_s,
                                    r.parts[r.stream_from].shift_s);
  }
  if (!(raw->oformat->flags & AVFMT_NOFILE)) {
    j.file.emplace(r.output, false);
    AVDictionary* opts = nullptr;  // the allowed protocols only (protocols.hpp)
    set_open_options(&opts, j.file->write_url(), false);
    const int ret =
        avio_open2(&raw->pb, j.file->write_url().c_str(), AVIO_FLAG_WRITE, nullptr, &opts);
    av_dict_free(&opts);
    av_check(ret, r.output);
    j.file->opened();
  }
  av_check(avformat_write_header(raw, nullptr), r.output + ": writing the header");
}

// Times no muxer takes: a pts before its dts, or a dts not after the last one written.
bool refused_times(const AVPacket& p, std::int64_t last_dts) {
  if (p.pts != AV_NOPTS_VALUE && p.dts != AV_NOPTS_VALUE && p.pts < p.dts) return true;
  return p.dts != AV_NOPTS_VALUE && last_dts != AV_NOPTS_VALUE && p.dts <= last_dts;
}

// How far part k's decode times move back to end before part k+1's first (ends_before_next;
// output time base): both read ahead, packets only.
std::int64_t dts_back(const JoinRequest& r, std::size_t k, AVRational out_tb) {
  if (!r.parts[k].ends_before_next || k + 1 == r.parts.size()) return 0;
  UniqueAVPacket pkt = make_av_packet();
  PartReader next(r.parts[k + 1], out_tb);
  if (!next.next(pkt.get()) || pkt->dts == AV_NOPTS_VALUE) return 0;
  const std::int64_t first_next = pkt->dts;
  av_packet_unref(pkt.get());
  std::int64_t last = AV_NOPTS_VALUE;
  PartReader self(r.parts[k], out_tb);
  for (; self.next(pkt.get()); av_packet_unref(pkt.get()))
    if (pkt->dts != AV_NOPTS_VALUE) last = pkt->dts;
  return last == AV_NOPTS_VALUE ? 0 : std::max<std::int64_t>(0, last - first_next + 1);
}

// Copies part k's video packets, with the audio up to each.
std::int64_t copy_part(JoinedFile& j, std::size_t k, const AVCodecParameters* out,
                       const JoinRequest& r, double& last_s, std::int64_t& last_dts,
                       std::int64_t& damaged) {
  const JoinPart& part = r.parts[k];
  PartReader in(part, j.video->time_base);
  if (!same_stream(out, in.stream()->codecpar, !r.headers.empty()))
    throw input_error(
        fmt::format("{}: its video stream is not the output's (codec, size, "
                    "pixel format or headers differ): it cannot be joined by copy",
                    part.path));
  const std::int64_t back = dts_back(r, k, j.video->time_base);
  UniqueAVPacket pkt = make_av_packet();
  std::int64_t written = 0;
  // An interrupt stops the copy once a video packet is in: a file without one does not play.
  const auto stop = [&] { return r.interrupt && r.interrupt->load() && written > 0; };
  for (; !stop() && in.next(pkt.get()); av_packet_unref(pkt.get())) {
    if (pkt->dts != AV_NOPTS_VALUE) pkt->dts -= back;
    // No decode time (a Matroska file's first packets) after another part: the earliest that
    // follows the last written (the muxer's own guess, from the stream's start, would not).
    if (pkt->dts == AV_NOPTS_VALUE && last_dts != AV_NOPTS_VALUE && pkt->pts != AV_NOPTS_VALUE)
      pkt->dts = std::min(pkt->pts, last_dts + 1);
    if (refused_times(*pkt, last_dts)) {  // damage: a muxer would end the whole run on it
      ++damaged;
      continue;
    }
    if (pkt->dts != AV_NOPTS_VALUE) last_dts = pkt->dts;
    pkt->stream_index = j.video->index;
    pkt->pos = -1;
    if (pkt->dts != AV_NOPTS_VALUE)
      last_s = static_cast<double>(pkt->dts) * av_q2d(j.video->time_base);
    if (j.audio && pkt->dts != AV_NOPTS_VALUE) j.audio->pump(last_s);
    av_check(av_interleaved_write_frame(j.out.get(), pkt.get()), r.output + ": writing");
    ++written;
  }
  return written;
}

}  // namespace

KeyframeIndex read_keyframes(const std::string& path) {
  UniqueDemuxContext in = open_input(path);
  const int v = video_stream_of(in.get(), path);
  for (unsigned i = 0; i < in->nb_streams; ++i)
    if (static_cast<int>(i) != v) in->streams[i]->discard = AVDISCARD_ALL;
  KeyframeIndex k;
  k.time_base = in->streams[v]->time_base;
  k.start_s = input_origin_s(in.get());
  k.first_pts = INT64_MAX;
  k.end_pts = INT64_MIN;
  UniqueAVPacket pkt = make_av_packet();
  while (av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v && pkt->pts != AV_NOPTS_VALUE) {
      ++k.packets;
      k.first_pts = std::min(k.first_pts, pkt->pts);
      k.end_pts = std::max(k.end_pts, pkt->pts + std::max<std::int64_t>(pkt->duration, 1));
      if (pkt->flags & AV_PKT_FLAG_KEY) k.keyframes.push_back(pkt->pts);
    }
    av_packet_unref(pkt.get());
  }
  if (k.packets == 0)
    throw input_error(fmt::format("{}: its video packets carry no timestamps", path));
  std::sort(k.keyframes.begin(), k.keyframes.end());
  return k;
}

JoinResult join_parts(const JoinRequest& r) {
  if (r.parts.empty())
    throw usage_error(fmt::format("{}: a join takes one part or more, none was given", r.output));
  if (r.stream_from >= r.parts.size())
    throw logic_error(fmt::format("{}: the output's stream from part {} of {}", r.output,
                                  r.stream_from + 1, r.parts.size()));
  RunFiles files;  // nothing joined is written over, and the output is no part
  for (std::size_t k = 0; k < r.parts.size(); ++k)
    files.reads(r.parts[k].path, fmt::format("part {}", k + 1));
  if (!r.audio_from.empty()) files.reads(r.audio_from, "audio_from");
  files.writes(r.output, "output");
  files.check();
  UniqueDemuxContext from = open_input(r.parts[r.stream_from].path);
  const AVStream* from_video =
      from->streams[video_stream_of(from.get(), r.parts[r.stream_from].path)];
  JoinedFile j;
  JoinResult result;
  open_joined(j, r, from.get(), from_video, result);
  double last_s = 0;  // the output's clock where the video ended
  std::int64_t last_dts = AV_NOPTS_VALUE;
  for (std::size_t k = 0; k < r.parts.size(); ++k) {
    result.part_packets.push_back(
        copy_part(j, k, j.video->codecpar, r, last_s, last_dts, result.damaged));
    result.video_packets += result.part_packets.back();
  }
  result.interrupted = r.interrupt && r.interrupt->load();
  if (j.audio) {
    // Cut short: the audio ends there too; a cut: at its end.
    const double end = r.audio_end_s ? *r.audio_end_s - r.audio_start_s : 1e18;
    j.audio->pump(result.interrupted || r.cut_short ? std::min(last_s, end) : end - 1e-9);
    result.audio_packets = j.audio->packets();
  }
  av_check(av_write_trailer(j.out.get()), r.output + ": writing the trailer");
  if (j.file) {
    av_check(avio_closep(&j.out->pb), r.output + ": writing");
    j.out.reset();
    j.file->commit();
  }
  return result;
}

}  // namespace vpipe
