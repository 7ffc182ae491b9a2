#include "supervisor/grpc_proxy.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "proto/generation_service.grpc.pb.h"
#include "serving/grpc_listen.h"
#include "supervisor/stream_replay.h"

namespace weft {
namespace {

namespace pb = weft::serving;

class ProxyService final : public pb::Generation::Service {
 public:
  ProxyService(std::string engine_address, int max_attempts, GrpcProxyHooks hooks)
      : engine_address_(std::move(engine_address)), max_attempts_(max_attempts), hooks_(std::move(hooks)) {}

  grpc::Status Generate(grpc::ServerContext* context, const pb::GenerateRequest* original,
                        grpc::ServerWriter<pb::GenerateResponse>* writer) override {
    pb::GenerateRequest request = *original;
    if (!request.sampling().has_seed()) {
      static thread_local std::mt19937_64 random(std::random_device{}());
      request.mutable_sampling()->set_seed(random() >> 2);
    }
    ChoiceHistory history;
    std::optional<std::string> id;
    std::optional<int64_t> created;
    int64_t generation = 0;
    std::string last_failure;
    for (int attempt = 1; attempt <= max_attempts_; ++attempt) {
      if (attempt > 1) {
        history.begin_attempt();
        hooks_.count_replay();
      }
      generation = hooks_.wait_ready(attempt == 1 ? 0 : generation);
      if (generation < 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the engine is down and the supervisor gave up");
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      // A fresh channel per attempt: one that saw the old engine die may sit in reconnect back-off
      // and fail a call to the new engine at once.
      auto channel = grpc::CreateChannel(engine_address_, grpc::InsecureChannelCredentials());
      auto stub = pb::Generation::NewStub(channel);
      grpc::ClientContext call;
      for (const auto& [key, value] : context->client_metadata()) {
        if (key == "authorization") call.AddMetadata(std::string(key.data(), key.size()), std::string(value.data(), value.size()));
      }
      auto reader = stub->Generate(&call, request);
      pb::GenerateResponse response;
      while (reader->Read(&response)) {
        if (context->IsCancelled()) {
          call.TryCancel();
          reader->Finish();
          return grpc::Status::CANCELLED;
        }
        if (!id) {
          id = response.id();
          created = response.created();
        }
        response.set_id(*id);
        response.set_created(*created);
        pb::GenerateResponse out = response;
        out.clear_choices();
        for (const pb::ChoiceDelta& choice : response.choices()) {
          auto admitted = history.admit(choice.index(), choice.SerializeAsString());
          if (!admitted.ok()) {
            call.TryCancel();
            reader->Finish();
            return grpc::Status(grpc::StatusCode::ABORTED, std::string(admitted.status().message()));
          }
          if (*admitted) *out.add_choices() = choice;
        }
        if (out.choices_size() == 0 && !out.has_usage()) continue;
        if (!writer->Write(out)) {
          call.TryCancel();
          reader->Finish();
          return grpc::Status::CANCELLED;
        }
      }
      const grpc::Status status = reader->Finish();
      if (status.ok()) return status;
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;  // the request's own error
      last_failure = status.error_message();
      hooks_.report_failure(generation, absl::StrCat("a gRPC call saw the engine fail: ", last_failure));
    }
    hooks_.count_abandoned();
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("the engine failed ", max_attempts_, " times while serving this request (last: ",
                                     last_failure, ")"));
  }

 private:
  const std::string engine_address_;
  const int max_attempts_;
  const GrpcProxyHooks hooks_;
};

}  // namespace

struct GrpcProxy::Impl {
  Impl(std::string engine_address, int max_attempts, GrpcProxyHooks hooks)
      : service(std::move(engine_address), max_attempts, std::move(hooks)) {}
  ProxyService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcProxy::GrpcProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcProxy::~GrpcProxy() { shutdown(std::chrono::milliseconds(0)); }

absl::StatusOr<std::unique_ptr<GrpcProxy>> GrpcProxy::start(const std::string& address, std::string engine_address,
                                                            int max_attempts, GrpcProxyHooks hooks) {
  auto impl = std::make_unique<Impl>(std::move(engine_address), max_attempts, std::move(hooks));
  auto server = start_grpc_server(address, &impl->service, &impl->port);
  if (!server.ok()) return server.status();
  impl->server = std::move(*server);
  return std::unique_ptr<GrpcProxy>(new GrpcProxy(std::move(impl)));
}

int GrpcProxy::port() const { return impl_->port; }

void GrpcProxy::shutdown(std::chrono::milliseconds grace) {
  if (!impl_ || !impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace weft
