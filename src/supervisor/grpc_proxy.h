// The supervisor's gRPC front (built with gRPC only): the weft.serving.Generation service,
// forwarded to the engine's own gRPC server (`weft serve --grpc-port`) and replayed on a
// restarted engine like the HTTP streams (supervisor.h): the request gets a pinned seed when it
// has none, and the replay's ChoiceDelta messages the client already has are compared (byte for
// byte, serialized) and dropped, the rest sent under the first attempt's id and creation time.
// An engine failure is a call that ends UNAVAILABLE; any other status is the request's own and
// goes to the client as it is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace weft {

struct GrpcProxyHooks {
  // Blocks until an engine newer than the argument is ready; its generation, or -1 (gave up).
  std::function<int64_t(int64_t)> wait_ready;
  std::function<void(int64_t, const std::string&)> report_failure;
  std::function<void()> count_replay;
  std::function<void()> count_abandoned;
};

class GrpcProxy {
 public:
  // Listens on `address` ("host:port"; port 0 picks one) and forwards to `engine_address`.
  static absl::StatusOr<std::unique_ptr<GrpcProxy>> start(const std::string& address,
                                                          std::string engine_address,
                                                          int max_attempts, GrpcProxyHooks hooks);
  ~GrpcProxy();
  int port() const;
  // Ends the server: calls still running are cancelled after `grace`.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  explicit GrpcProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft
