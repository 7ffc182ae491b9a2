// A gRPC client of weft.serving.Generation for scripts: one Generate call, streamed.
//   grpc_generate_client --port P --prompt TEXT [--chat] [--max-tokens N] [--temperature T]
//                        [--seed S]
// Prints "first" (flushed) when the first message with text arrives, then one JSON line:
// {"text", "finish_reason", "messages", "status", "message"}. Exit 0 when the call ended OK.
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "nlohmann/json.hpp"
#include "proto/generation_service.grpc.pb.h"

namespace pb = weft::serving;

int main(int argc, char** argv) {
  std::string port, prompt;
  bool chat = false;
  pb::GenerateRequest request;
  pb::SamplingOptions* sampling = request.mutable_sampling();
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << flag << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (flag == "--port") port = value();
    else if (flag == "--prompt") prompt = value();
    else if (flag == "--chat") chat = true;
    else if (flag == "--max-tokens") sampling->set_max_tokens(std::stoi(value()));
    else if (flag == "--temperature") sampling->set_temperature(std::stof(value()));
    else if (flag == "--seed") sampling->set_seed(std::stoull(value()));
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (chat) {
    pb::ChatMessage* m = request.mutable_chat()->add_messages();
    m->set_role("user");
    m->set_content(prompt);
  } else {
    request.set_text(prompt);
  }
  auto stub = pb::Generation::NewStub(grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto reader = stub->Generate(&context, request);
  pb::GenerateResponse response;
  std::string text, finish;
  int messages = 0;
  while (reader->Read(&response)) {
    for (const pb::ChoiceDelta& c : response.choices()) {
      if (messages == 0 && !c.text().empty()) std::cout << "first" << std::endl;
      text += c.text();
      if (!c.finish_reason().empty()) finish = c.finish_reason();
    }
    ++messages;
  }
  const grpc::Status status = reader->Finish();
  std::cout << nlohmann::json{{"text", text}, {"finish_reason", finish}, {"messages", messages},
                              {"status", static_cast<int>(status.error_code())},
                              {"message", status.error_message()}}
                   .dump()
            << std::endl;
  return status.ok() ? 0 : 1;
}
