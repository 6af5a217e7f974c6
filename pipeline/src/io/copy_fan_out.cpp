#include "vpipe/pipeline/io/copy_fan_out.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <new>

#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

CopyFanOut::CopyFanOut(std::string path, MediaCounters& counters)
    : path_(std::move(path)), counters_(counters) {}

void CopyFanOut::add(std::vector<int> output_index, QueuePtr<Packet> copy_out,
                     std::vector<StreamReencoder*> reencoders) {
  copy_out->add_producer();
  targets_.push_back({std::move(output_index), std::move(copy_out), std::move(reencoders)});
}

bool CopyFanOut::copied(int index) const {
  for (const auto& t : targets_)
    if (index >= 0 && index < static_cast<int>(t.output_index.size()) &&
        t.output_index[static_cast<std::size_t>(index)] >= 0)
      return true;
  return false;
}

void CopyFanOut::send(Packet p, int index) {
  for (std::size_t k = 1; k < targets_.size(); ++k) {  // the others get references to it
    UniqueAVPacket ref(av_packet_clone(p.pkt.get()));
    if (!ref) throw std::bad_alloc();
    send(targets_[k], Packet{std::move(ref), p.origin}, index);
  }
  send(targets_.front(), std::move(p), index);
}

void CopyFanOut::send(Target& t, Packet p, int index) {
  const auto i = static_cast<std::size_t>(index);
  if (i >= t.output_index.size() || t.output_index[i] < 0) return;
  const int to = t.output_index[i];
  StreamReencoder* enc = i < t.reencoders.size() ? t.reencoders[i] : nullptr;
  if (!enc) {
    p.pkt->stream_index = to;
    t.out->push(std::move(p));  // false only when the muxer is gone (failure or stop)
    return;
  }
  reencoded(t, index, enc->push(p.pkt.get()), p.origin);
}

// What a re-encoder gave for input stream `index`, to its muxer; a packet it
// could not take (damage in the input) is counted as the muxer counts one it refuses.
void CopyFanOut::reencoded(Target& t, int index, std::vector<UniqueAVPacket> packets,
                           Clock::time_point origin) {
  const auto i = static_cast<std::size_t>(index);
  StreamReencoder* enc = t.reencoders[i];
  if (reencode_errors_.size() <= i) reencode_errors_.resize(i + 1, 0);
  if (const std::int64_t errors = enc->errors(); errors > reencode_errors_[i]) {
    if (counters_.packets_damaged.fetch_add(errors - reencode_errors_[i]) == 0)
      spdlog::warn("{}: a packet of stream #{} did not re-encode ({}); dropped (counted)", path_,
                   index, enc->encoder()->codec->name);
    reencode_errors_[i] = errors;
  }
  for (auto& pkt : packets) {
    pkt->stream_index = t.output_index[i];
    t.out->push(Packet{std::move(pkt), origin});
  }
}

// The end of the input: what each re-encoder holds (its resampler, its
// encoder's delay) goes to the muxer before the queue closes.
void CopyFanOut::flush_reencoders() {
  for (auto& t : targets_)
    for (std::size_t i = 0; i < t.reencoders.size(); ++i) {
      if (!t.reencoders[i] || i >= t.output_index.size() || t.output_index[i] < 0) continue;
      reencoded(t, static_cast<int>(i), t.reencoders[i]->push(nullptr), Clock::now());
    }
}

// Another connection to a live input: its streams keep their outputs only where the layout is
// the same (as many streams, the video where it was); the rest are dropped from now on.
void CopyFanOut::remap(bool same_layout, unsigned streams) {
  for (auto& t : targets_) {
    if (!same_layout) std::fill(t.output_index.begin(), t.output_index.end(), -1);
    t.output_index.resize(streams, -1);
  }
}

void CopyFanOut::finish() {
  flush_reencoders();
  for (auto& t : targets_) t.out->close();
  closed_ = true;
}

void CopyFanOut::close() noexcept {
  if (!closed_)
    for (auto& t : targets_) t.out->close();
  closed_ = true;
}

}  // namespace vpipe
