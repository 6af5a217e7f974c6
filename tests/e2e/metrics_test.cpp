// vpipe transcode --metrics-port: Prometheus text, /healthz and /readyz read
// with a real HTTP client while a transcode runs, alone and with --streams.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "media_check.hpp"

using namespace vpipe::test;

namespace {

struct Seen {
  std::string metrics;
  int healthz = 0, readyz = 0;
};

// Polls the endpoint until `want` is in /metrics and /readyz says 200 (or 10 s pass).
Seen watch(int port, const std::string& want) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  Seen seen;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (auto r = client.Get("/healthz")) seen.healthz = r->status;
    if (auto r = client.Get("/readyz")) seen.readyz = r->status;
    if (auto r = client.Get("/metrics"); r && r->status == 200) seen.metrics = r->body;
    if (seen.readyz == 200 && seen.metrics.find(want) != std::string::npos) break;
  }
  return seen;
}

int free_port(int salt) { return 21000 + (::getpid() * 7 + salt) % 20000; }

}  // namespace

TEST(TranscodeMetrics, ServedWhileATranscodeRuns) {
  const int port = free_port(1);
  const auto out = (std::filesystem::temp_directory_path() /
                    ("vpipe-metrics-" + std::to_string(::getpid()) + ".mp4"))
                       .string();
  // Paced: the run lasts ~3 s, long enough to be scraped.
  auto run = std::async(std::launch::async, [&] {
    return run_vpipe("transcode " + kSample + " " + out +
                     " --device cpu --vf resize=320x180 "
                     "--realtime --frames 90 --preset ultrafast --metrics-port " +
                     std::to_string(port));
  });
  const Seen seen = watch(port, "vpipe_frames_written_total{stream=\"1\"");
  EXPECT_EQ(seen.healthz, 200);
  EXPECT_EQ(seen.readyz, 200) << "inputs open and a frame out";
  for (const char* series :
       {"# TYPE vpipe_frames_written_total counter", "vpipe_frames_decoded_total{stream=\"1\"",
        "vpipe_latency_seconds{stream=\"1\"", "quantile=\"0.99\"", "vpipe_queue_depth{stream=\"1\"",
        "vpipe_input_reconnects_total{stream=\"1\"", "vpipe_process_resident_memory_bytes "})
    EXPECT_NE(seen.metrics.find(series), std::string::npos) << series << "\n" << seen.metrics;
  const auto r = run.get();
  std::filesystem::remove(out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("metrics at http://127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.err;
}

TEST(TranscodeMetrics, EveryStreamOfAMultiStreamRunIsLabelled) {
  const int port = free_port(2);
  auto run = std::async(std::launch::async, [&] {
    return run_vpipe("transcode " + kSample +
                     " null --device cpu --vf resize=320x180 --realtime "
                     "--frames 90 --streams 3 --metrics-port " +
                     std::to_string(port));
  });
  const Seen seen = watch(port, "vpipe_frames_written_total{stream=\"3\"");
  EXPECT_EQ(seen.readyz, 200);
  for (const char* stream : {"stream=\"1\"", "stream=\"2\"", "stream=\"3\""})
    EXPECT_NE(seen.metrics.find(std::string("vpipe_frames_written_total{") + stream),
              std::string::npos)
        << stream << "\n"
        << seen.metrics;
  const auto r = run.get();
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(TranscodeMetrics, APortInUseIsAClearError) {
  const BusyPort busy;
  ASSERT_GT(busy.port(), 0);
  const auto r =
      run_vpipe("transcode " + kSample + " null --device cpu --frames 5 --metrics-port " +
                std::to_string(busy.port()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("address in use"), std::string::npos) << r.err;
}

// Issue #40: a second vpipe bound a port the first was serving (SO_REUSEPORT),
// and idle connections delayed /healthz for seconds. Now the second refuses,
// and /healthz answers within 2 s while 200 connections sit idle.
TEST(TranscodeMetrics, OnePortOneServerAndIdleClientsDoNotStallIt) {
  const int port = free_port(3);
  auto first = std::async(std::launch::async, [&] {
    return run_vpipe("transcode " + kSample + " null --device cpu --realtime --loop 2 " +
                     "--metrics-port " + std::to_string(port));
  });
  ASSERT_EQ(watch(port, "vpipe_").healthz, 200) << "the first server never answered";
  const auto second = run_vpipe("transcode " + kSample + " null --device cpu --frames 5 " +
                                "--metrics-port " + std::to_string(port));
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("address in use"), std::string::npos) << second.err;
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // Not waiting: the kernel finishes each handshake as the server accepts.
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || errno == EINPROGRESS)
      idle.push_back(fd);
    else
      ::close(fd);
  }
  // Until each handshake is done (the server took the connection), 5 s at most.
  std::size_t open = 0;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       open < idle.size() && std::chrono::steady_clock::now() < until;) {
    std::vector<pollfd> fds;
    for (const int fd : idle) fds.push_back({fd, POLLOUT, 0});
    ::poll(fds.data(), fds.size(), 100);
    open = static_cast<std::size_t>(std::count_if(
        fds.begin(), fds.end(), [](const pollfd& p) { return (p.revents & POLLOUT) != 0; }));
  }
  EXPECT_GE(open, 190u) << "connections the server took";
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = client.Get("/healthz");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r) << "no answer within 2 s behind " << idle.size() << " idle connections";
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(s, 2.0);
  for (const int fd : idle) ::close(fd);
  EXPECT_EQ(first.get().exit_code, 0);
}
