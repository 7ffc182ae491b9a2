// Starting a gRPC server on "host:port" (port 0: any free one) with one service: the part the
// engine's gRPC server and the supervisor's gRPC front share. Header-only: each caller already
// links gRPC.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace weft {

// The running server and the port it bound (*port), or an error naming the address.
inline absl::StatusOr<std::unique_ptr<grpc::Server>> start_grpc_server(const std::string& address,
                                                                       grpc::Service* service,
                                                                       int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || *port == 0) {
    return absl::UnavailableError(absl::StrCat("--grpc-port: cannot listen on ", address));
  }
  return server;
}

}  // namespace weft
