#include "soak/metrics_server.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {
constexpr std::size_t kConnections = 256;
}  // namespace

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(const std::string& address, int port,
                             std::function<std::string()> body, std::function<bool()> ready)
    : impl_(std::make_unique<Impl>()) {
  impl_->server.Get("/metrics",
                    [body = std::move(body)](const httplib::Request&, httplib::Response& res) {
                      res.set_content(body(), "text/plain; version=0.0.4; charset=utf-8");
                    });
  impl_->server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  impl_->server.Get(
      "/readyz", [ready = std::move(ready)](const httplib::Request&, httplib::Response& res) {
        const bool ok = ready();
        res.status = ok ? 200 : 503;
        res.set_content(ok ? "ready\n" : "not ready: inputs not open or no frame out yet\n",
                        "text/plain");
      });
  impl_->server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("vpipe: /metrics (Prometheus text), /healthz, /readyz\n", "text/plain");
  });
  // Served in bounded time however many clients sit idle (issue #40: 8 idle
  // connections delayed /healthz 3.5 s, 200 made it time out): a thread for
  // each of up to 256 connections, and one that sends nothing for 1 s is closed.
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(kConnections); };
  impl_->server.set_read_timeout(1, 0);
  impl_->server.set_keep_alive_timeout(1);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second
  // process bound the same port and scrapes alternated between the two.
  impl_->server.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  errno = 0;
  port_ = port == 0 ? impl_->server.bind_to_any_port(address)
                    : (impl_->server.bind_to_port(address, port) ? port : -1);
  if (port_ <= 0) {  // bind(2)'s errno survives httplib's close: say why ("address in use")
    const int err = errno;
    throw input_error(fmt::format("--metrics-port: cannot listen on {}:{}: {}", address, port,
                                  err == EADDRINUSE
                                      ? std::string("address in use (another program has the port)")
                                  : err ? std::string(std::strerror(err))
                                        : std::string("bind failed")));
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace vpipe
