// Fuzzes message content through the real chat templates of the tokenizer fixtures (qwen3,
// llama2, deepseek_v3) and tests/unit/chat_template/data/templates. Input byte 0 picks the
// template; the rest is, when it parses as JSON, the request's messages (an array) or
// {"messages": [...], ...extra variables}, otherwise the raw content of one user message.
// Properties: no crash; errors (the templates' raise_exception, type errors) are statuses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/bounded_json.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_template.h"

namespace {

std::vector<weft::ChatTemplate>& templates() {
  static std::vector<weft::ChatTemplate> loaded;
  return loaded;
}

std::filesystem::path source_dir() {
  if (const char* env = std::getenv("WEFT_SOURCE_DIR")) return env;
  return WEFT_SOURCE_DIR;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void add(const std::string& source, const std::string& what) {
  auto tmpl = weft::ChatTemplate::parse(source);
  if (!tmpl.ok()) {
    std::fprintf(stderr, "%s: %s\n", what.c_str(), std::string(tmpl.status().message()).c_str());
    std::abort();
  }
  templates().push_back(std::move(*tmpl));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const auto root = source_dir();
  for (const char* name : {"qwen3", "llama2", "deepseek_v3"}) {
    const auto path = root / "tests/tokenizer_data/fixtures" / name / "tokenizer_config.json";
    const auto config = nlohmann::json::parse(read(path));
    if (config.contains("chat_template") && config["chat_template"].is_string()) {
      add(config["chat_template"].get<std::string>(), path.string());
    }
  }
  for (const char* name : {"llama3.jinja", "mistral.jinja", "chatml.jinja", "features.jinja"}) {
    const auto path = root / "tests/unit/chat_template/data/templates" / name;
    add(read(path), path.string());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const weft::ChatTemplate& tmpl = templates()[data[0] % templates().size()];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);

  nlohmann::ordered_json messages;
  nlohmann::ordered_json extra;
  // As the front ends read it: nesting bounded while parsing (a deep message once overflowed the
  // stack in nlohmann's recursive copy).
  absl::StatusOr<nlohmann::ordered_json> read =
      weft::parse_json_bounded<nlohmann::ordered_json>(rest, "messages", weft::request_json_limits());
  nlohmann::ordered_json parsed = read.ok() ? *std::move(read) : nlohmann::ordered_json();
  if (parsed.is_array()) {
    messages = std::move(parsed);
  } else if (parsed.is_object() && parsed.contains("messages")) {
    messages = parsed["messages"];
    parsed.erase("messages");
    extra = std::move(parsed);
  } else {
    messages = nlohmann::ordered_json::array(
        {{{"role", "system"}, {"content", "sys"}},
         {{"role", "user"}, {"content", std::string(rest)}}});
  }
  weft::ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_loop_iterations = 100'000;
  limits.now = [] {
    std::tm t{};
    t.tm_year = 124;
    t.tm_mday = 1;
    return t;
  };
  (void)weft::render_chat(tmpl, messages, (data[0] & 0x80) != 0, "<s>", "</s>", extra, limits);
  return 0;
}
