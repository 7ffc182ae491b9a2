// Load benchmark for `weft serve` (a program, not a test): C concurrent streaming clients on
// loopback, each on its own keep-alive connection, all driven by one epoll thread, until R
// requests have completed (or --time-limit passes). Reports requests/s, time to first token and
// inter-token latency percentiles, errors and dropped streams, and (with --server-pid) the
// server's CPU time and peak memory from /proc.
//   serve_load_bench --port P [--host 127.0.0.1] [--concurrency 500] [--requests 1000]
//                    [--max-tokens 16] [--prompt TEXT] [--server-pid PID] [--time-limit 300]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Client {
  int fd = -1;
  std::string out;
  size_t out_off = 0;
  std::string in;
  size_t scan = 0;
  bool headers = false;
  bool active = false;
  Clock::time_point sent, last;
  int frames = 0;
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()))];
}

struct ProcStats {
  double cpu_s = 0;
  long rss_kb = 0, hwm_kb = 0;
};

ProcStats proc_stats(int pid) {
  ProcStats s;
  if (pid <= 0) return s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(line.substr(close + 2));
    std::string f;
    std::vector<std::string> fields;
    while (rest >> f) fields.push_back(f);
    if (fields.size() > 13) s.cpu_s = (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kb = std::stol(line.substr(6));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a = {{"host", "127.0.0.1"}, {"port", ""},        {"concurrency", "500"},
                                          {"requests", "1000"},  {"max-tokens", "16"}, {"prompt", "Tell me a story"},
                                          {"server-pid", "0"},   {"time-limit", "300"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || !a.count(k.substr(2))) {
      std::cerr << "unknown flag " << k << "\n";
      return 2;
    }
    a[k.substr(2)] = argv[i + 1];
  }
  if (a["port"].empty()) {
    std::cerr << "usage: serve_load_bench --port P [--concurrency C] [--requests R] [--max-tokens T]\n";
    return 2;
  }
  const int port = std::stoi(a["port"]), conc = std::stoi(a["concurrency"]), total = std::stoi(a["requests"]);
  const int server_pid = std::stoi(a["server-pid"]);
  const auto limit = std::chrono::seconds(std::stoi(a["time-limit"]));
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  const std::string body = nlohmann::json{{"prompt", a["prompt"]}, {"max_tokens", std::stoi(a["max-tokens"])},
                                          {"stream", true}, {"ignore_eos", true}, {"temperature", 0}}
                               .dump();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;

  const int ep = epoll_create1(0);
  std::vector<Client> clients(conc);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, a["host"].c_str(), &addr.sin_addr);

  int started = 0, completed = 0, errors = 0, dropped = 0;
  std::vector<double> ttft, itl, e2e;
  auto send_next = [&](int i) {
    Client& c = clients[i];
    if (started >= total) return;
    ++started;
    c.out = request;
    c.out_off = 0;
    c.in.clear();
    c.scan = 0;
    c.headers = false;
    c.active = true;
    c.frames = 0;
    c.sent = Clock::now();
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) c.out_off = static_cast<size_t>(n);
  };
  auto fail = [&](int i, bool drop) {
    Client& c = clients[i];
    if (c.active) (drop ? dropped : errors)++;
    c.active = false;
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  };

  const ProcStats before = proc_stats(server_pid);
  const auto t0 = Clock::now();
  for (int i = 0; i < conc; ++i) {
    Client& c = clients[i];
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      std::cerr << "connect " << i << ": " << std::strerror(errno) << "\n";
      ++errors;
      if (c.fd >= 0) close(c.fd);
      c.fd = -1;
      continue;
    }
    const int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    send_next(i);
  }

  std::vector<epoll_event> events(1024);
  char buf[65536];
  while (completed + errors + dropped < started || started < total) {
    if (Clock::now() - t0 > limit) {
      std::cerr << "time limit reached\n";
      break;
    }
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 1000);
    if (n == 0 && std::all_of(clients.begin(), clients.end(), [](const Client& c) { return c.fd < 0; })) break;
    for (int e = 0; e < n; ++e) {
      const int i = static_cast<int>(events[e].data.u32);
      Client& c = clients[i];
      if (c.fd < 0) continue;
      const ssize_t r = recv(c.fd, buf, sizeof(buf), 0);
      if (r <= 0) {
        fail(i, true);
        continue;
      }
      const auto now = Clock::now();
      c.in.append(buf, static_cast<size_t>(r));
      if (!c.headers) {
        const size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        if (c.in.compare(0, 12, "HTTP/1.1 200") != 0) {
          std::cerr << "error response: " << c.in.substr(0, c.in.find("\r\n")) << "\n";
          fail(i, false);
          continue;
        }
        c.headers = true;
        c.scan = end + 4;
      }
      bool done = false;
      for (;;) {
        const size_t d = c.in.find("data: ", c.scan);
        if (d == std::string::npos) break;
        const size_t f = c.in.find("\n\n", d);
        if (f == std::string::npos) break;
        c.scan = f + 2;
        if (c.in.compare(d, 12, "data: [DONE]") == 0) {
          done = true;
          break;
        }
        if (c.frames == 0) {
          ttft.push_back(ms(now - c.sent));
        } else {
          itl.push_back(ms(now - c.last));
        }
        c.last = now;
        ++c.frames;
      }
      if (done) {
        e2e.push_back(ms(now - c.sent));
        ++completed;
        c.active = false;
        // Wait for the chunked terminator, then reuse the connection.
        if (c.in.find("0\r\n\r\n", c.scan) == std::string::npos) {
          char tail[16];
          recv(c.fd, tail, sizeof(tail), 0);
        }
        send_next(i);
      }
    }
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const ProcStats after = proc_stats(server_pid);
  for (int i = 0; i < conc; ++i) {
    if (clients[i].active) ++dropped;
    if (clients[i].fd >= 0) close(clients[i].fd);
  }

  nlohmann::json report = {
      {"concurrency", conc},
      {"requests_completed", completed},
      {"errors", errors},
      {"dropped_streams", dropped},
      {"wall_s", wall},
      {"requests_per_s", completed / wall},
      {"tokens_per_s", static_cast<double>(ttft.size() + itl.size()) / wall},
      {"ttft_ms", {{"p50", pct(ttft, 50)}, {"p99", pct(ttft, 99)}}},
      {"itl_ms", {{"p50", pct(itl, 50)}, {"p99", pct(itl, 99)}}},
      {"e2e_ms", {{"p50", pct(e2e, 50)}, {"p99", pct(e2e, 99)}}},
  };
  if (server_pid > 0) {
    report["server"] = {{"cpu_s", after.cpu_s - before.cpu_s},
                        {"cpu_utilisation", (after.cpu_s - before.cpu_s) / wall},
                        {"rss_mib", after.rss_kb / 1024.0},
                        {"peak_rss_mib", after.hwm_kb / 1024.0}};
  }
  std::cout << report.dump(2) << "\n";
  return errors == 0 && dropped == 0 && completed == total ? 0 : 1;
}
