// What the C API's files share: the error guard, the frame handle, the
// session keeper, options from JSON.
#pragma once

#include <initializer_list>
#include <string_view>

#include <atomic>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/transcode.hpp"
#include "vpipe_capi.h"

namespace vpipe::capi {

void set_error(std::string message, int kind);

// Runs `body`; an exception becomes this thread's last error and `failed`.
template <class F, class R>
R guarded(F&& body, R failed) {
  try {
    set_error({}, VPIPE_ERROR_NONE);
    return body();
  } catch (const input_error& e) {
    set_error(e.what(), VPIPE_ERROR_INPUT);
  } catch (const chain_error& e) {
    set_error(e.what(), VPIPE_ERROR_INPUT);
  } catch (const not_negotiated& e) {
    set_error(e.what(), VPIPE_ERROR_INPUT);
  } catch (const nlohmann::json::exception& e) {
    set_error(fmt::format("options: {}", e.what()), VPIPE_ERROR_INPUT);
  } catch (const std::exception& e) {
    set_error(e.what(), VPIPE_ERROR_RUNTIME);
  }
  return failed;
}

// The session whose memory (strategy, NVDEC pool, rings) frames point into:
// frames handed out hold it, so it outlives every tensor made from them.
struct SessionKeeper {
  std::atomic<int> interrupt{0};  // the session's inputs poll it: it dies after the session
  std::unique_ptr<TranscodeSession> session;
};

// The options in `j`, set through vpipe's one option schema (set_option);
// `binding_keys` are the binding's own keys, read by the caller ("prefetch").
[[nodiscard]] TranscodeOptions options_from(
    const nlohmann::json& j, std::initializer_list<std::string_view> binding_keys = {});

// Slots of the "python" filter: which session a slot's frames belong to.
void bind_filter_slots(const std::string& filters, const std::shared_ptr<SessionKeeper>& keep);

}  // namespace vpipe::capi

struct vpipe_frame {
  std::shared_ptr<vpipe::capi::SessionKeeper>
      keep;  // dies last: the frame's memory goes back first
  vpipe::Frame frame;
};
