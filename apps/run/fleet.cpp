#include "run/fleet.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "vpipe/pipeline/transcode.hpp"

namespace vpipe {

StreamSupervisor::StreamSupervisor(StreamSpec spec, LiveRegistry* live)
    : spec_(std::move(spec)), live_(live), thread_([this] { run(); }) {}

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

void StreamSupervisor::run() {
  double backoff = spec_.restart.backoff_s;
  for (int attempt = 0;; ++attempt) {
    TranscodeOptions o = spec_.options;
    o.output = output_for(attempt);
    o.interrupt = &stop_;
    o.live = live_;
    o.stream_label = spec_.name;
    if (spec_.skip_done && attempt == 0 && std::filesystem::exists(o.output)) {
      std::lock_guard lock(m_);
      state_ = "done (output exists)";
      break;
    }
    {
      std::lock_guard lock(m_);
      state_ = "running";
    }
    bool ended = false;
    try {
      const TranscodeReport r = transcode(o);
      std::lock_guard lock(m_);
      runs_.push_back(r.to_json());
      ended = true;
    } catch (const transcode_failed& e) {
      std::lock_guard lock(m_);
      runs_.push_back(e.report.to_json());
      last_error_ = e.what();
    } catch (const std::exception& e) {
      std::lock_guard lock(m_);
      last_error_ = e.what();
    }
    std::unique_lock lock(m_);
    if (stop_) {
      state_ = "stopped";
      break;
    }
    if (ended && !spec_.restart_on_end) {
      state_ = "done";
      break;
    }
    if (restarts_ >= spec_.restart.max) {
      state_ = "gave up";
      break;
    }
    ++restarts_;
    state_ = "restarting";
    lock.unlock();
    if (!wait_backoff(backoff)) {
      std::lock_guard relock(m_);
      state_ = "stopped";
      break;
    }
    backoff = std::min(backoff * 2, spec_.restart.backoff_max_s);
  }
  finished_ = true;
}

void to_json(nlohmann::json& j, const StreamStatus& s) {
  j = {{"name", s.name},   {"input", s.input},       {"output", s.output},
       {"state", s.state}, {"restarts", s.restarts}, {"last_error", s.last_error},
       {"runs", s.runs}};
}

StreamStatus StreamSupervisor::status() const {
  std::lock_guard lock(m_);
  return {spec_.name, spec_.options.input, spec_.options.output, state_, restarts_, last_error_,
          runs_};
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
  for (auto it = streams_.begin(); it != streams_.end();) {
    const auto w = wanted.find(it->first);
    if (w != wanted.end() && same_stream(it->second->spec(), *w->second)) {
      ++it;
      continue;
    }
    it->second->stop();  // removed or changed: finalize its output, join later
    retired_.push_back(std::move(it->second));
    it = streams_.erase(it);
  }
  for (const auto& s : streams)
    if (!streams_.count(s.name)) streams_[s.name] = std::make_unique<StreamSupervisor>(s, live_);
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
