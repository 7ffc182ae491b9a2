#include "serving/grpc_server.h"

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/grpcpp.h>

#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/generation_service.grpc.pb.h"
#include "serving/grpc_listen.h"
#include "sampling/stop_checker.h"

namespace weft {
namespace {

using nlohmann::json;
namespace pb = weft::serving;

grpc::Status to_grpc(const ApiError& e) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (e.status) {
    case 400: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case 401: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case 404: code = grpc::StatusCode::NOT_FOUND; break;
    case 429: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case 503: code = grpc::StatusCode::UNAVAILABLE; break;
    default: break;
  }
  return grpc::Status(code, e.message);
}

// The first field of `m` (or of a message inside it) that this build's proto does not know, as
// "PATH field N"; empty when there is none. A client built from another weft.serving proto (one
// with tool calling, say) sends such fields, and protobuf keeps them aside: they are refused,
// never silently ignored.
std::string unknown_field(const google::protobuf::Message& m, const std::string& path) {
  const google::protobuf::Reflection& reflection = *m.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown = reflection.GetUnknownFields(m);
  if (unknown.field_count() > 0) return absl::StrCat(path, " field ", unknown.field(0).number());
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection.ListFields(m, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string inner = absl::StrCat(path, ".", f->name());
    if (!f->is_repeated()) {
      if (std::string found = unknown_field(reflection.GetMessage(m, f), inner); !found.empty()) return found;
      continue;
    }
    for (int i = 0; i < reflection.FieldSize(m, f); ++i) {
      std::string found = unknown_field(reflection.GetRepeatedMessage(m, f, i), absl::StrCat(inner, "[", i, "]"));
      if (!found.empty()) return found;
    }
  }
  return "";
}

// The proto request as the JSON body an HTTP client would send.
json to_json(const pb::GenerateRequest& r, ApiKind& kind) {
  json j = json::object();
  if (!r.model().empty()) j["model"] = r.model();
  kind = ApiKind::kCompletion;
  if (r.has_chat()) {
    kind = ApiKind::kChat;
    j["messages"] = json::array();
    for (const auto& m : r.chat().messages()) j["messages"].push_back({{"role", m.role()}, {"content", m.content()}});
  } else if (r.has_token_ids()) {
    j["prompt"] = std::vector<int32_t>(r.token_ids().ids().begin(), r.token_ids().ids().end());
  } else {
    j["prompt"] = r.text();
  }
  const pb::SamplingOptions& s = r.sampling();
  if (s.has_max_tokens()) j["max_tokens"] = s.max_tokens();
  if (s.has_temperature()) j["temperature"] = s.temperature();
  if (s.has_top_p()) j["top_p"] = s.top_p();
  if (s.has_top_k()) j["top_k"] = s.top_k();
  if (s.has_min_p()) j["min_p"] = s.min_p();
  if (s.has_repetition_penalty()) j["repetition_penalty"] = s.repetition_penalty();
  if (s.has_presence_penalty()) j["presence_penalty"] = s.presence_penalty();
  if (s.has_frequency_penalty()) j["frequency_penalty"] = s.frequency_penalty();
  if (s.has_seed()) j["seed"] = s.seed();
  if (s.stop_size() > 0) j["stop"] = std::vector<std::string>(s.stop().begin(), s.stop().end());
  if (s.stop_token_ids_size() > 0) {
    j["stop_token_ids"] = std::vector<int32_t>(s.stop_token_ids().begin(), s.stop_token_ids().end());
  }
  if (s.has_n()) j["n"] = s.n();
  if (s.has_min_tokens()) j["min_tokens"] = s.min_tokens();
  if (s.has_ignore_eos()) j["ignore_eos"] = s.ignore_eos();
  if (s.has_skip_special_tokens()) j["skip_special_tokens"] = s.skip_special_tokens();
  if (s.has_logprobs()) {
    if (kind == ApiKind::kChat) {
      j["logprobs"] = true;
      j["top_logprobs"] = s.logprobs();
    } else {
      j["logprobs"] = s.logprobs();
    }
  }
  for (const auto& [id, bias] : s.logit_bias()) j["logit_bias"][std::to_string(id)] = bias;
  return j;
}

struct Shared {
  AsyncEngine& engine;
  ServedModel model;
  ServingMetrics& metrics;
  std::string api_key;
  std::atomic<bool> draining{false};
};

class GenerateReactor : public grpc::ServerWriteReactor<pb::GenerateResponse> {
 public:
  GenerateReactor(Shared& shared, grpc::CallbackServerContext* context, const pb::GenerateRequest* request)
      : shared_(shared) {
    start(context, *request);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      if (stream_) shared_.engine.abort(stream_->key());
      finish_locked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    pump_locked();
  }

  void OnCancel() override {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (stream_) shared_.engine.abort(stream_->key());
    if (!writing_) finish_locked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    if (stream_) stream_->set_notify(nullptr);
    if (latency_) latency_->on_finish(finish_reason_.empty() ? "abort" : finish_reason_);
    delete this;
  }

 private:
  void start(grpc::CallbackServerContext* context, const pb::GenerateRequest& request) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!shared_.api_key.empty()) {
      const auto& md = context->client_metadata();
      auto it = md.find("authorization");
      const std::string want = "Bearer " + shared_.api_key;
      if (it == md.end() || std::string(it->second.data(), it->second.size()) != want) {
        return finish_locked(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or invalid API key"));
      }
    }
    if (shared_.draining.load()) {
      return finish_locked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
    if (const std::string unknown = unknown_field(request, "GenerateRequest"); !unknown.empty()) {
      return finish_locked(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat(unknown, ": not a field of this server's weft.serving proto (the gRPC API has no tool calling "
                                "or constrained output; the HTTP API has them)")));
    }
    ApiKind kind = ApiKind::kCompletion;
    // to_json sets kind: it must run before kind is read (argument order is unspecified, and g++
    // read kind first, so chat requests were parsed as completions without a prompt).
    const json body = to_json(request, kind);
    auto parsed = parse_generation_request(body, kind, shared_.model);
    if (auto* e = std::get_if<ApiError>(&parsed)) return finish_locked(to_grpc(*e));
    GenerationRequest& req = std::get<GenerationRequest>(parsed);
    // The gRPC request holds one prompt and no echo, so it parses to one engine request.
    if (req.prompts.size() != 1 || !req.generate) {
      return finish_locked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "expected one prompt to generate from"));
    }
    logprobs_ = req.logprobs;
    Request& engine_request = req.prompts.front().engine_request;
    const int n = engine_request.params.n;
    prompt_tokens_ = static_cast<int64_t>(engine_request.prompt_ids.size());
    auto stream = shared_.engine.submit(std::move(engine_request));
    if (!stream.ok()) return finish_locked(to_grpc(api_error_from_status(stream.status())));
    stream_ = *stream;
    shared_.metrics.add_prompt_tokens(prompt_tokens_);
    latency_ = std::make_unique<RequestLatency>(shared_.metrics, stream_->submitted_at(), n);
    static std::atomic<uint64_t> counter{0};
    id_ = absl::StrCat("gen-", stream_->key(), "-", counter.fetch_add(1));
    created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    stream_->set_notify([this] {
      std::lock_guard<std::recursive_mutex> l(mu_);
      pump_locked();
    });
    pump_locked();
  }

  std::string token_text(int32_t id) const {
    const int32_t one[1] = {id};
    return shared_.model.tokenizer->decode(one, false);
  }

  void pump_locked() {
    if (writing_ || finished_ || !stream_) return;
    RequestStream::Batch batch = stream_->take();
    if (!batch.status.ok()) return finish_locked(to_grpc(api_error_from_status(batch.status)));
    response_.Clear();
    response_.set_id(id_);
    response_.set_created(created_);
    for (const StreamEvent& e : batch.events) {
      latency_->on_event(e);
      completion_tokens_ += static_cast<int64_t>(e.output.token_ids.size());
      pb::ChoiceDelta* c = response_.add_choices();
      c->set_index(e.output.index);
      c->set_text(e.output.text);
      for (size_t i = 0; i < e.output.token_ids.size(); ++i) {
        c->add_token_ids(e.output.token_ids[i]);
        if (logprobs_ && i < e.output.samples.size()) {
          pb::TokenLogprob* lp = c->add_logprobs();
          lp->set_token_id(e.output.token_ids[i]);
          lp->set_token(token_text(e.output.token_ids[i]));
          lp->set_logprob(e.output.samples[i].logprob);
          for (const auto& [id, v] : e.output.samples[i].top_logprobs) {
            pb::TopLogprob* t = lp->add_top_logprobs();
            t->set_token_id(id);
            t->set_token(token_text(id));
            t->set_logprob(v);
          }
        }
      }
      if (e.output.finished) {
        c->set_finish_reason(std::string(finish_reason_name(e.output.finish_reason)));
        if (finish_reason_.empty()) finish_reason_ = c->finish_reason();
      }
    }
    if (batch.finished) {
      pb::Usage* u = response_.mutable_usage();
      u->set_prompt_tokens(prompt_tokens_);
      u->set_completion_tokens(completion_tokens_);
      u->set_total_tokens(prompt_tokens_ + completion_tokens_);
      finished_ = true;
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
      return;
    }
    if (response_.choices_size() == 0) return;
    writing_ = true;
    StartWrite(&response_);
  }

  void finish_locked(grpc::Status status) {
    if (finished_) return;
    finished_ = true;
    Finish(std::move(status));
  }

  Shared& shared_;
  // Recursive: gRPC may run a reaction (OnWriteDone) inline from StartWrite.
  std::recursive_mutex mu_;
  std::shared_ptr<RequestStream> stream_;
  std::unique_ptr<RequestLatency> latency_;
  pb::GenerateResponse response_;
  std::string id_;
  int64_t created_ = 0;
  bool logprobs_ = false;
  bool writing_ = false;
  bool finished_ = false;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
  std::string finish_reason_;
};

class Service final : public pb::Generation::CallbackService {
 public:
  explicit Service(Shared& shared) : shared_(shared) {}
  grpc::ServerWriteReactor<pb::GenerateResponse>* Generate(grpc::CallbackServerContext* context,
                                                           const pb::GenerateRequest* request) override {
    return new GenerateReactor(shared_, context, request);
  }

 private:
  Shared& shared_;
};

}  // namespace

struct GrpcServer::Impl {
  Impl(AsyncEngine& engine, ServedModel model, ServingMetrics& metrics, std::string api_key)
      : shared{engine, std::move(model), metrics, std::move(api_key)}, service(shared) {}
  Shared shared;
  Service service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::start(const std::string& address, AsyncEngine& engine,
                                                              ServedModel model, ServingMetrics& metrics,
                                                              std::string api_key) {
  auto impl = std::make_unique<Impl>(engine, std::move(model), metrics, std::move(api_key));
  auto server = start_grpc_server(address, &impl->service, &impl->port);
  if (!server.ok()) return server.status();
  impl->server = std::move(*server);
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

int GrpcServer::port() const { return impl_->port; }

void GrpcServer::begin_drain() { impl_->shared.draining.store(true); }

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (!impl_ || !impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace weft
