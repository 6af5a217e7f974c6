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

// The parameters a part's packets depend on: the first part's are the output's.
bool same_stream(const AVCodecParameters* a, const AVCodecParameters* b) {
  return a->codec_id == b->codec_id && a->width == b->width && a->height == b->height &&
         a->format == b->format && a->extradata_size == b->extradata_size &&
         (a->extradata_size == 0 || std::memcmp(a->extradata, b->extradata,
                                                static_cast<std::size_t>(a->extradata_size)) == 0);
}

// The output being written: declared in the order it must die (the muxer closes its file
// before the staged file removes an unfinished one; the audio source is read through it).
struct JoinedFile {
  std::optional<StagedOutput> file;
  UniqueMuxContext out;
  std::optional<AudioCopy> audio;
  AVStream* video = nullptr;
};

// The video stream as the first part's: parameters, codec tag where the container takes it,
// rotation, language and flags.
void add_video(JoinedFile& j, const AVStream* first) {
  j.video = avformat_new_stream(j.out.get(), nullptr);
  av_check(avcodec_parameters_copy(j.video->codecpar, first->codecpar), "video parameters");
  keep_codec_tag(first->codecpar, j.video, j.out->oformat);
  j.video->time_base = first->time_base;
  j.video->avg_frame_rate = first->avg_frame_rate;
  j.video->r_frame_rate = first->r_frame_rate;
  j.video->disposition = first->disposition;
  av_dict_copy(&j.video->metadata, first->metadata, 0);
  copy_display_matrix(first, j.video);
}

void open_joined(JoinedFile& j, const JoinRequest& r, const AVFormatContext* first_part,
                 const AVStream* first, JoinResult& result) {
  AVFormatContext* raw = nullptr;
  const std::string net = network_output_format(r.output);  // "-": MPEG-TS, as a transcode's
  av_check(avformat_alloc_output_context2(&raw, nullptr, net.empty() ? nullptr : net.c_str(),
                                          r.output.c_str()),
           r.output);
  j.out.reset(raw);
  add_video(j, first);
  if (!r.audio_from.empty())
    j.audio.emplace(open_input(r.audio_from), raw, r.output, r.audio_start_s, r.every_audio_track);
  result.audio_streams = static_cast<int>(raw->nb_streams) - 1;
  if (r.first_parts_metadata) {
    av_dict_copy(&raw->metadata, first_part->metadata, 0);
    result.chapters = copy_chapters(first_part, raw, -1e300, 1e300, r.starts_s.front());
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

// Copies one part's video packets, moved to start at `start_s`, with the audio up to each.
std::int64_t copy_part(JoinedFile& j, const std::string& part, double start_s,
                       const AVCodecParameters* first, const JoinRequest& r, double& last_s,
                       std::int64_t& damaged) {
  std::int64_t last_dts = AV_NOPTS_VALUE;
  const std::string& output = r.output;
  UniqueDemuxContext in = open_input(part);
  const int v = video_stream_of(in.get(), part);
  const AVStream* s = in->streams[v];
  if (!same_stream(first, s->codecpar))
    throw input_error(
        fmt::format("{}: its video stream is not the first part's (codec, size, "
                    "pixel format or headers differ): it cannot be joined by copy",
                    part));
  const auto shift = static_cast<std::int64_t>(std::llround(start_s / av_q2d(s->time_base)));
  UniqueAVPacket pkt = make_av_packet();
  std::int64_t written = 0;
  // An interrupt stops the copy once a video packet is in: a file without one does not play.
  const auto stop = [&] { return r.interrupt && r.interrupt->load() && written > 0; };
  while (!stop() && av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index != v) {
      av_packet_unref(pkt.get());
      continue;
    }
    if (pkt->pts != AV_NOPTS_VALUE) pkt->pts += shift;
    if (pkt->dts != AV_NOPTS_VALUE) pkt->dts += shift;
    av_packet_rescale_ts(pkt.get(), s->time_base, j.video->time_base);
    if (refused_times(*pkt, last_dts)) {  // damage: a muxer would end the whole run on it
      ++damaged;
      av_packet_unref(pkt.get());
      continue;
    }
    if (pkt->dts != AV_NOPTS_VALUE) last_dts = pkt->dts;
    pkt->stream_index = j.video->index;
    pkt->pos = -1;
    if (pkt->dts != AV_NOPTS_VALUE)
      last_s = static_cast<double>(pkt->dts) * av_q2d(j.video->time_base);
    if (j.audio && pkt->dts != AV_NOPTS_VALUE) j.audio->pump(last_s);
    av_check(av_interleaved_write_frame(j.out.get(), pkt.get()), output + ": writing");
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
  if (r.parts.size() != r.starts_s.size())
    throw usage_error(fmt::format("{}: a join takes one start per part ({} parts, {} starts)",
                                  r.output, r.parts.size(), r.starts_s.size()));
  for (std::size_t k = 1; k < r.starts_s.size(); ++k)
    if (!(r.starts_s[k] > r.starts_s[k - 1]))
      throw usage_error(
          fmt::format("{}: part {} starts at {} s, not after part {} ({} s): the "
                      "starts must increase",
                      r.output, k + 1, r.starts_s[k], k, r.starts_s[k - 1]));
  RunFiles files;  // nothing joined is written over, and the output is no part
  for (std::size_t k = 0; k < r.parts.size(); ++k)
    files.reads(r.parts[k], fmt::format("part {}", k + 1));
  if (!r.audio_from.empty()) files.reads(r.audio_from, "audio_from");
  files.writes(r.output, "output");
  files.check();
  UniqueDemuxContext first = open_input(r.parts.front());
  const AVStream* first_video = first->streams[video_stream_of(first.get(), r.parts.front())];
  JoinedFile j;
  JoinResult result;
  open_joined(j, r, first.get(), first_video, result);
  double last_s = 0;  // the output's clock where the video ended
  for (std::size_t k = 0; k < r.parts.size(); ++k)
    result.video_packets +=
        copy_part(j, r.parts[k], r.starts_s[k], first_video->codecpar, r, last_s, result.damaged);
  result.interrupted = r.interrupt && r.interrupt->load();
  if (j.audio) {
    j.audio->pump(result.interrupted ? last_s : 1e18);  // cut short: the audio ends there too
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
