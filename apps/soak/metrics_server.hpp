// A Prometheus text endpoint: GET /metrics answers body() (cpp-httplib's
// server on its own thread), GET /healthz 200 while the process serves, GET
// /readyz 200 when ready() says so (503 before). For watching a long soak or
// a transcode live, and for a supervisor's probes.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace vpipe {

class MetricsServer {
 public:
  // Listens on address:port (port 0: any free port). Throws std::runtime_error
  // naming the address when it cannot bind.
  MetricsServer(
      const std::string& address, int port, std::function<std::string()> body,
      std::function<bool()> ready = [] { return true; });
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace vpipe
