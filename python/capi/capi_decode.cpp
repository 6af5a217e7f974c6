// vpipe_decoder: a TranscodeSession with output "null" running on its own
// thread; each frame at its end is queued (bounded: the pipeline waits while
// the caller holds `queue_depth` frames unread) for vpipe_decoder_next().
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "capi_internal.hpp"

using nlohmann::json;
using vpipe::capi::guarded;
using vpipe::capi::SessionKeeper;

// Members in the order they must die, last first: the runner is joined before
// the queue and the keeper go (close() does it; the destructor checks).
struct vpipe_decoder {
  std::shared_ptr<SessionKeeper> keep;
  std::mutex m;
  std::condition_variable cv;
  std::deque<vpipe_frame*> frames;
  std::size_t capacity = 4;
  bool done = false;
  bool closing = false;
  std::string error;
  int error_kind = VPIPE_ERROR_NONE;
  std::string report;
  std::thread runner;

  void push(const vpipe::Frame& f);
  void run();
  ~vpipe_decoder() {
    for (auto* f : frames) delete f;
  }
};

void vpipe_decoder::push(const vpipe::Frame& f) {
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return frames.size() < capacity || closing; });
  if (closing) return;
  frames.push_back(new vpipe_frame{keep, f});
  cv.notify_all();
}

void vpipe_decoder::run() {
  std::string text;
  int kind = VPIPE_ERROR_NONE;
  try {
    const vpipe::TranscodeReport r = keep->session->run();
    text = vpipe::json_text(r.to_json());
    if (r.interrupted && !closing) kind = VPIPE_ERROR_INTERRUPTED;
  } catch (const vpipe::transcode_failed& e) {
    text = vpipe::json_text(e.report.to_json());
    kind = VPIPE_ERROR_RUNTIME;
    error = e.what();
  } catch (const std::exception& e) {
    kind = VPIPE_ERROR_RUNTIME;
    error = e.what();
  }
  std::lock_guard lock(m);
  report = std::move(text);
  error_kind = kind;
  if (kind == VPIPE_ERROR_INTERRUPTED) error = "interrupted";
  done = true;
  cv.notify_all();
}

extern "C" {

vpipe_decoder* vpipe_decoder_open(const char* options_json) {
  return guarded(
      [&] {
        const json j = json::parse(options_json);
        vpipe::TranscodeOptions o = vpipe::capi::options_from(j, {"prefetch"});
        if (o.output != "null")
          throw vpipe::input_error("decode: the output is the caller (no \"output\")");
        auto d = std::make_unique<vpipe_decoder>();
        d->keep = std::make_shared<SessionKeeper>();
        d->capacity = std::max<std::size_t>(1, j.value("prefetch", std::size_t{4}));
        if (o.streams > 1 || !o.gpus.empty())
          throw vpipe::usage_error(
              "options: a Decoder yields one stream's frames (streams 1, no gpus)");
        vpipe::RunHooks hooks;
        hooks.frames_on_device = true;
        hooks.interrupt = &d->keep->interrupt;
        hooks.on_frame = [dec = d.get()](const vpipe::Frame& f) { dec->push(f); };
        d->keep->session =
            std::make_unique<vpipe::TranscodeSession>(std::move(o), std::move(hooks));
        d->runner = std::thread([dec = d.get()] { dec->run(); });
        return d.release();
      },
      static_cast<vpipe_decoder*>(nullptr));
}

int vpipe_decoder_next(vpipe_decoder* d, int timeout_ms, vpipe_frame** frame) {
  std::unique_lock lock(d->m);
  const bool ready = d->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                    [&] { return !d->frames.empty() || d->done; });
  if (!ready) return 2;
  if (!d->frames.empty()) {
    *frame = d->frames.front();
    d->frames.pop_front();
    d->cv.notify_all();
    return 1;
  }
  if (d->error_kind == VPIPE_ERROR_NONE) return 0;
  vpipe::capi::set_error(d->error, d->error_kind);
  return -1;
}

const char* vpipe_decoder_report(vpipe_decoder* d) {
  std::lock_guard lock(d->m);
  return d->report.c_str();
}

void vpipe_decoder_close(vpipe_decoder* d) {
  if (!d) return;
  {
    std::lock_guard lock(d->m);
    d->closing = true;
    d->keep->interrupt = 1;  // the session stops reading, drains, and returns
    d->cv.notify_all();
  }
  if (d->runner.joinable()) d->runner.join();
  delete d;  // frames already taken keep the session (and its memory) alive
}

}  // extern "C"
