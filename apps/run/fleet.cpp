#include "run/fleet.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

StreamSupervisor::StreamSupervisor(StreamSpec spec, LiveRegistry* live, GpuPlacer* gpus,
                                   int first_attempt)
    : spec_(std::move(spec)),
      first_attempt_(first_attempt),
      next_attempt_(first_attempt),
      live_(live),
      gpus_(gpus),
      thread_([this] { run(); }) {}

StreamSupervisor::~StreamSupervisor() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void StreamSupervisor::stop() {
  {
    std::lock_guard lock(m_);
    stop_ = 1;
  }
  cv_.notify_all();
}

bool StreamSupervisor::wait_backoff(double seconds) {
  std::unique_lock lock(m_);
  return !cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                       [&] { return stop_.load() != 0; });
}

// A live feed restarted writes a new file each time (OUT-restart1.ts…), so
// a restart never replaces what the previous run finalized.
std::string StreamSupervisor::output_for(int attempt) const {
  const std::string& out = spec_.options.output;
  if (attempt == 0 || out == "null" || out.find("://") != std::string::npos) return out;
  const std::filesystem::path p(out);
  return (p.parent_path() /
          fmt::format("{}-restart{}{}", p.stem().string(), attempt, p.extension().string()))
      .string();
}

// One run of the stream on `gpu_` (-1: where the session puts it); true when it ended by
// itself. A failure is kept as last_error_; `gpu_fault` says whether a CUDA error caused it.
bool StreamSupervisor::attempt(int number, bool& gpu_fault) {
  TranscodeOptions o = spec_.options;
  o.output = output_for(number);
  RunHooks hooks;
  hooks.interrupt = &stop_;
  hooks.live = live_;
  hooks.stream_label = spec_.name;
  gpu_fault = false;
  try {
    if (gpu_ >= 0) VPIPE_CUDA_TRY(cudaSetDevice(gpu_));  // the session's strategy and streams
    const TranscodeReport r = transcode(o, hooks);
    std::lock_guard lock(m_);
    runs_.push_back(r.to_json());
    return true;
  } catch (const std::exception& e) {
    std::lock_guard lock(m_);
    if (const auto* failed = dynamic_cast<const transcode_failed*>(&e))
      runs_.push_back(failed->report.to_json());
    last_error_ = e.what();
    gpu_fault = is_gpu_fault(e);
  }
  return false;
}

// --on-gpu-error move after a CUDA error on gpu_: false when no other GPU can take the stream.
bool StreamSupervisor::move_gpu() {
  const auto to = gpus_->move_from(gpu_);
  std::lock_guard lock(m_);
  if (!to) {
    last_error_ += fmt::format(" (on GPU {}; --on-gpu-error move: no other GPU can take it)", gpu_);
    gpu_ = -1;  // move_from counted it off that GPU
    return false;
  }
  last_error_ += fmt::format(" (on GPU {}; moved to GPU {})", gpu_, *to);
  gpu_ = *to;
  return true;
}

void StreamSupervisor::run() {
  if (gpus_ && !gpus_->empty()) {
    try {
      const int gpu = gpus_->place();
      std::lock_guard lock(m_);
      gpu_ = gpu;
    } catch (const std::exception& e) {
      std::lock_guard lock(m_);
      state_ = "gave up";
      last_error_ = e.what();
      finished_ = true;
      return;
    }
  }
  double backoff = spec_.restart.backoff_s;
  for (int number = first_attempt_;; ++number) {
    if (spec_.skip_done && number == 0 && std::filesystem::exists(output_for(0))) {
      std::lock_guard lock(m_);
      state_ = "done (output exists)";
      break;
    }
    {
      std::lock_guard lock(m_);
      state_ = "running";
    }
    bool gpu_fault = false, moved = false, stranded = false;
    next_attempt_ = number + 1;
    const bool ended = attempt(number, gpu_fault);
    if (gpu_fault && gpu_ >= 0 && spec_.options.on_gpu_error == OnGpuError::kMove)
      (move_gpu() ? moved : stranded) = true;
    std::unique_lock lock(m_);
    if (stop_) {
      state_ = "stopped";
      break;
    }
    if (ended && !spec_.restart_on_end) {
      state_ = "done";
      break;
    }
    if (restarts_ >= spec_.restart.max || stranded) {
      state_ = "gave up";
      break;
    }
    ++restarts_;
    state_ = "restarting";
    lock.unlock();
    if (!wait_backoff(moved ? 0 : backoff)) {
      std::lock_guard relock(m_);
      state_ = "stopped";
      break;
    }
    if (!moved) backoff = std::min(backoff * 2, spec_.restart.backoff_max_s);
  }
  if (gpu_ >= 0) gpus_->release(gpu_);
  finished_ = true;
}

void to_json(nlohmann::json& j, const StreamStatus& s) {
  j = {{"name", s.name},   {"input", s.input},       {"output", s.output},
       {"state", s.state}, {"restarts", s.restarts}, {"last_error", s.last_error},
       {"runs", s.runs}};
  if (s.gpu >= 0) j["gpu"] = s.gpu;
}

StreamStatus StreamSupervisor::status() const {
  std::lock_guard lock(m_);
  return {
      spec_.name, spec_.options.input, spec_.options.output, state_, restarts_, last_error_, runs_,
      gpu_};
}

bool same_stream(const StreamSpec& a, const StreamSpec& b) {
  const auto& x = a.options;
  const auto& y = b.options;
  return x.input == y.input && x.output == y.output && x.filters == y.filters &&
         x.device == y.device && x.decode == y.decode && x.mem == y.mem && x.encoder == y.encoder &&
         x.crf == y.crf && x.preset == y.preset && x.realtime == y.realtime && x.loop == y.loop &&
         x.max_frames == y.max_frames && a.restart.max == b.restart.max &&
         a.restart.backoff_s == b.restart.backoff_s && a.restart_on_end == b.restart_on_end;
}

void Fleet::apply(const std::vector<StreamSpec>& streams) {
  std::lock_guard lock(m_);
  std::map<std::string, const StreamSpec*> wanted;
  for (const auto& s : streams) wanted[s.name] = &s;
  std::map<std::string, int> first_attempt;
  for (auto it = streams_.begin(); it != streams_.end();) {
    const auto w = wanted.find(it->first);
    if (w != wanted.end() && same_stream(it->second->spec(), *w->second)) {
      ++it;
      continue;
    }
    it->second->stop();  // removed or changed: finalize its output, join later
    // Changed, same output: the new run goes on from the old one's attempts (the
    // README's promise: a restart never writes over a finalized file).
    if (w != wanted.end() && w->second->options.output == it->second->spec().options.output)
      first_attempt[it->first] = it->second->next_attempt();
    retired_.push_back(std::move(it->second));
    it = streams_.erase(it);
  }
  for (const auto& s : streams)
    if (!streams_.count(s.name))
      streams_[s.name] = std::make_unique<StreamSupervisor>(
          s, live_, gpus_, first_attempt.count(s.name) ? first_attempt[s.name] : 0);
}

void Fleet::stop_all() {
  std::lock_guard lock(m_);
  for (auto& [name, s] : streams_) s->stop();
}

bool Fleet::all_finished() const {
  std::lock_guard lock(m_);
  for (const auto& [name, s] : streams_)
    if (!s->finished()) return false;
  return true;
}

std::vector<StreamStatus> Fleet::status() const {
  std::lock_guard lock(m_);
  std::vector<StreamStatus> out;
  for (const auto& s : retired_) out.push_back(s->status());
  for (const auto& [name, s] : streams_) out.push_back(s->status());
  return out;
}

std::string Fleet::metrics_text() const {
  const auto all = status();
  std::string out;
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& s : all)
      out += fmt::format("{}{{stream=\"{}\"}} {}\n", name, s.name, value(s));
  };
  family("vpipe_stream_restarts_total", "counter",
         "Times the stream was restarted after it failed or ended.",
         [](const StreamStatus& s) { return s.restarts; });
  family("vpipe_stream_up", "gauge", "1 while the stream runs.",
         [](const StreamStatus& s) { return s.state == "running" ? 1 : 0; });
  family("vpipe_stream_gave_up", "gauge", "1 once the stream used up its restarts.",
         [](const StreamStatus& s) { return s.state == "gave up" ? 1 : 0; });
  return out;
}

}  // namespace vpipe
