#include "vpipe/pipeline/parallel/segment_encode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {

bool same_headers(const AVCodecContext* a, const AVCodecContext* b) {
  return a->extradata_size == b->extradata_size &&
         (a->extradata_size == 0 || std::memcmp(a->extradata, b->extradata,
                                                static_cast<std::size_t>(a->extradata_size)) == 0);
}

// One segment through a fresh encoder: its packets, with the frames' origins.
std::vector<Packet> encode_segment(const SegmentedEncodeStage::OpenEncoder& open,
                                   const AVCodecContext* header, std::vector<Frame> frames,
                                   int out_stream) {
  UniqueAVCodecContext enc = open();
  if (!same_headers(enc.get(), header))
    throw logic_error(fmt::format(
        "encode_segments: a segment's {} encoder wrote other stream headers than the output's "
        "({} against {} bytes); its segments would not join into one stream",
        enc->codec->name, enc->extradata_size, header->extradata_size));
  return encode_frames(enc.get(), frames, out_stream);
}

}  // namespace

int encode_segment_frames(int gop) { return gop > 0 ? gop : 60; }

int encode_threads_each(int encoders) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, encoders));
}

std::vector<Packet> encode_frames(AVCodecContext* encoder, std::span<Frame> frames,
                                  int out_stream) {
  std::map<std::int64_t, Clock::time_point> origin;
  std::vector<Packet> packets;
  auto drain = [&] {
    while (true) {
      Packet p{make_av_packet(), {}};
      const int ret = avcodec_receive_packet(encoder, p.pkt.get());
      if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
      av_check(ret, "encoding frames");
      p.origin = recall(origin, p.pkt->pts);
      p.pkt->stream_index = out_stream;
      packets.push_back(std::move(p));
    }
  };
  for (Frame& f : frames) {
    remember(origin, f.av->pts, f.origin);
    av_check(send_video_frame(encoder, f.av.get()), "encoding frames");
    drain();
  }
  av_check(send_video_frame(encoder, nullptr), "flushing an encoder");
  drain();
  return packets;
}

void continue_dts(std::vector<Packet>& packets, std::int64_t& last_dts) {
  if (packets.empty()) return;
  const std::int64_t first = packets.front().pkt->dts;
  const std::int64_t shift =
      last_dts == AV_NOPTS_VALUE || first == AV_NOPTS_VALUE || first > last_dts
          ? 0
          : last_dts + 1 - first;
  for (Packet& p : packets) {
    AVPacket* pkt = p.pkt.get();
    if (pkt->dts == AV_NOPTS_VALUE) continue;
    pkt->dts += shift;
    if (last_dts != AV_NOPTS_VALUE && pkt->dts <= last_dts) pkt->dts = last_dts + 1;
    if (pkt->pts != AV_NOPTS_VALUE && pkt->dts > pkt->pts)
      throw logic_error(fmt::format(
          "encode_segments: a segment's decode time {} passes its presentation time {} after "
          "the segment before it (which ended at {}): the segments do not join",
          pkt->dts, pkt->pts, last_dts));
    last_dts = pkt->dts;
  }
}

SegmentedEncodeStage::SegmentedEncodeStage(OpenEncoder open, const AVCodecContext* header,
                                           int out_stream, MediaCounters& counters, int encoders,
                                           int segment_frames)
    : open_(std::move(open)),
      header_(header),
      out_stream_(out_stream),
      counters_(counters),
      encoders_(encoders),
      segment_frames_(static_cast<std::size_t>(segment_frames)),
      input_(header, counters) {
  VPIPE_EXPECTS(encoders >= 1 && segment_frames >= 1, "segmented encode: encoders and frames >= 1");
}

SegmentedEncodeStage::~SegmentedEncodeStage() {
  for (auto& f : encoding_)
    if (f.valid()) f.wait();
}

Flow SegmentedEncodeStage::process(Frame frame, Output<Packet>& out) {
  frame = input_.prepare(std::move(frame), read_stamps_);
  // Out of the staging slot: a segment holds its frames for a while.
  Frame own = Frame::allocate_host(frame.format);
  av_check(av_frame_copy(own.av.get(), frame.av.get()), "encode: copying a frame");
  own.copy_props_from(frame);
  own.av->pts = frame.av->pts;
  own.av->pict_type = AV_PICTURE_TYPE_NONE;
  filling_.push_back(std::move(own));
  if (filling_.size() == segment_frames_ && !dispatch(out)) return Flow::kStop;
  // A segment already done leaves now (the others keep encoding).
  while (!encoding_.empty() &&
         encoding_.front().wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    if (!emit_oldest(out)) return Flow::kStop;
  return out.downstream_stopped() ? Flow::kStop : Flow::kContinue;
}

bool SegmentedEncodeStage::dispatch(Output<Packet>& out) {
  if (static_cast<int>(encoding_.size()) == encoders_ && !emit_oldest(out)) return false;
  encoding_.push_back(std::async(std::launch::async, encode_segment, std::cref(open_), header_,
                                 std::move(filling_), out_stream_));
  filling_.clear();
  return true;
}

bool SegmentedEncodeStage::emit_oldest(Output<Packet>& out) {
  std::vector<Packet> packets = encoding_.front().get();  // rethrows the encoder's error
  encoding_.pop_front();
  continue_dts(packets, last_dts_);
  for (Packet& p : packets) {
    count_encoded(*p.pkt, *header_, counters_);
    if (!out.emit(std::move(p))) return false;
  }
  return true;
}

void SegmentedEncodeStage::finish(Output<Packet>& out) {
  if (!filling_.empty() && !dispatch(out)) return;
  while (!encoding_.empty())
    if (!emit_oldest(out)) return;
}

}  // namespace vpipe
