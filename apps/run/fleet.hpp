// The runner of `vpipe run`: one supervisor per stream, each on its own
// thread, restarting its stream by the stream's policy without touching the
// others; apply() takes a new config (SIGHUP): streams added start, streams
// removed stop (their outputs finalized), streams changed restart.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "run/fleet_config.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"

namespace vpipe {

// Where one stream of a fleet stands (the report's "streams" entries).
struct StreamStatus {
  std::string name, input, output;
  std::string state;  // starting, running, restarting, done, stopped, gave up
  int restarts = 0;
  std::string last_error;
  nlohmann::json runs;  // each run's TranscodeReport, as written
  int gpu = -1;         // --gpus: the device it runs on now (-1: none placed)
};
void to_json(nlohmann::json& j, const StreamStatus& s);

// One stream's life: runs, fails, waits, runs again; stop() ends it (the
// output of the run in progress is finalized). Members in the order they
// must die, last first: the thread goes first.
class StreamSupervisor {
 public:
  // `gpus` (--gpus, may be null): where the stream is placed, and moved on a CUDA error
  // with on_gpu_error move; it outlives the supervisor.
  // `first_attempt`: the attempt to start at (its output OUT-restartN.ext), after the
  // attempts of a supervisor it replaces with the same output (a SIGHUP change).
  StreamSupervisor(StreamSpec spec, LiveRegistry* live, GpuPlacer* gpus = nullptr,
                   int first_attempt = 0);
  ~StreamSupervisor();  // stop() and join
  StreamSupervisor(const StreamSupervisor&) = delete;
  StreamSupervisor& operator=(const StreamSupervisor&) = delete;
  void stop();
  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] const StreamSpec& spec() const { return spec_; }
  [[nodiscard]] StreamStatus status() const;
  // The attempt a successor writing the same output starts at: never over one of these.
  [[nodiscard]] int next_attempt() const { return next_attempt_; }

 private:
  void run();
  [[nodiscard]] bool attempt(int number, bool& gpu_fault);
  [[nodiscard]] bool move_gpu();
  [[nodiscard]] bool wait_backoff(double seconds);  // false: stopped meanwhile
  [[nodiscard]] std::string output_for(int attempt) const;

  const StreamSpec spec_;
  const int first_attempt_;
  std::atomic<int> next_attempt_;
  LiveRegistry* live_;
  GpuPlacer* gpus_;
  std::atomic<int> stop_{0};  // the session's interrupt: draining, finalizing
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::string state_ = "starting";  // running, restarting, done, stopped, gave up
  std::string last_error_;
  int restarts_ = 0;
  int gpu_ = -1;  // written by the stream's thread, read under m_ by status()
  nlohmann::json runs_ = nlohmann::json::array();  // each run's report
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

class Fleet {
 public:
  // `gpus` (--gpus, may be null) places each stream; it outlives the fleet.
  explicit Fleet(LiveRegistry* live, GpuPlacer* gpus = nullptr) : live_(live), gpus_(gpus) {}
  // Starts streams new in `config`, stops those gone, restarts those changed.
  void apply(const std::vector<StreamSpec>& streams);
  void stop_all();
  [[nodiscard]] bool all_finished() const;
  [[nodiscard]] std::vector<StreamStatus> status() const;  // per stream
  // Prometheus series of the supervisors: restarts, up, gave up.
  [[nodiscard]] std::string metrics_text() const;

 private:
  LiveRegistry* live_;
  GpuPlacer* gpus_;
  mutable std::mutex m_;
  std::map<std::string, std::unique_ptr<StreamSupervisor>> streams_;
  std::vector<std::unique_ptr<StreamSupervisor>> retired_;  // stopped by apply(), joined at the end
};

// Whether two specs run the same thing (a changed stream is restarted).
[[nodiscard]] bool same_stream(const StreamSpec& a, const StreamSpec& b);

}  // namespace vpipe
