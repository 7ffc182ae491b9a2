// The gRPC frontend: weft.serving.Generation/Generate (src/proto/generation_service.proto), a
// server-streaming RPC with the semantics of the HTTP endpoints: the request is checked by the
// same parse_generation_request (text / token ids as a completion, chat messages with the chat
// template), each response message carries what the sequences produced since the previous one,
// and the last one carries usage. Errors map to gRPC codes: INVALID_ARGUMENT (naming the field),
// NOT_FOUND (unknown model), RESOURCE_EXHAUSTED (waiting queue full), UNAVAILABLE (draining or
// engine stopped), UNAUTHENTICATED (metadata "authorization: Bearer <key>" missing or wrong when
// an api key is set). A cancelled call aborts its request.
//
// Uses gRPC's callback API: a stream holds no thread; writes are started by the engine thread's
// notification (at most one write in flight per call; later outputs coalesce into the next).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/async_engine.h"
#include "serving/metrics.h"
#include "serving/openai_request.h"

namespace weft {

class GrpcServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one).
  static absl::StatusOr<std::unique_ptr<GrpcServer>> start(const std::string& address, AsyncEngine& engine,
                                                           ServedModel model, ServingMetrics& metrics,
                                                           std::string api_key);
  ~GrpcServer();

  int port() const;
  void begin_drain();
  // Ends the server: calls still running after `grace` are cancelled.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  explicit GrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft
