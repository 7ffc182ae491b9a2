#include "tokenizer/chat_template_source.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "core/bounded_json.h"
#include "tokenizer/json_path.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> read_template_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return absl::NotFoundError(str_cat(path.string(), ": no such file"));
  }
  const auto size = fs::file_size(path, ec);
  if (!ec && size > ChatTemplateSources::kMaxFileBytes) {
    return absl::InvalidArgumentError(str_cat(path.string(), ": ", size,
                                              " bytes is larger than the ",
                                              ChatTemplateSources::kMaxFileBytes, "-byte limit"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(str_cat(path.string(), ": cannot open for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const size_t valid = utf8::valid_prefix_len(text);
  if (valid != text.size()) {
    return absl::InvalidArgumentError(
        str_cat(path.string(), ": not valid UTF-8 (invalid byte at offset ", valid, ")"));
  }
  return text;
}

// chat_template.json: {"chat_template": "..."} (processing_utils reads exactly that key).
absl::StatusOr<std::string> json_file_template(const fs::path& path) {
  auto text = read_template_file(path);
  if (!text.ok()) return text.status();
  JsonLimits limits = request_json_limits();
  limits.reject_duplicate_keys = false;  // Python's json keeps the last value
  auto parsed = parse_json_bounded<nlohmann::json>(*text, path.string(), limits);
  if (!parsed.ok()) return parsed.status();
  const JsonPath root(path.string(), "");
  if (!parsed->is_object()) {
    return absl::InvalidArgumentError(str_cat(path.string(), ": expected a JSON object"));
  }
  return root.get_string(*parsed, "chat_template");
}

// tokenizer_config.json's "chat_template": a string or a list of {name, template}.
absl::Status add_config_templates(const nlohmann::json& config, const fs::path& config_path,
                                  std::vector<ChatTemplateSource>& out) {
  if (!config.is_object()) return absl::OkStatus();
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  const JsonPath field(config_path.string(), "chat_template");
  if (it->is_string()) {
    out.push_back({std::string(ChatTemplateSources::kDefaultName), it->get<std::string>(),
                   str_cat(config_path.string(), " field chat_template")});
    return absl::OkStatus();
  }
  if (!it->is_array())
    return field.error("expected a string or a list of {\"name\", \"template\"}");
  const size_t first = out.size();
  for (size_t i = 0; i < it->size(); ++i) {
    const JsonPath entry = field.index(i);
    const nlohmann::json& e = (*it)[i];
    if (!e.is_object()) return entry.error("expected an object {\"name\", \"template\"}");
    auto name = entry.get_string(e, "name");
    if (!name.ok()) return name.status();
    auto text = entry.get_string(e, "template");
    if (!text.ok()) return text.status();
    // transformers builds a dict (the last entry of a name wins); two different texts under one
    // name are a mistake in the file, not a choice.
    for (size_t j = first; j < out.size(); ++j) {
      if (out[j].name == *name && out[j].text != *text) {
        return entry.error(str_cat("names template '", *name, "' again with a different text (",
                                   out[j].origin, " differs)"));
      }
    }
    out.push_back({*name, *text, str_cat(config_path.string(), " field ", entry.field())});
  }
  return absl::OkStatus();
}

// 1-based line of the first byte where `a` and `b` differ.
size_t first_differing_line(const std::string& a, const std::string& b) {
  const auto mismatch =
      std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin());
  return 1 + static_cast<size_t>(std::count(a.begin(), mismatch.first, '\n'));
}

}  // namespace

absl::StatusOr<ChatTemplateSources> ChatTemplateSources::load(
    const fs::path& model_dir, const nlohmann::json& tokenizer_config,
    const fs::path& config_path) {
  ChatTemplateSources out;
  out.where_ = model_dir.string();
  std::error_code ec;
  const fs::path jinja = model_dir / kJinjaFile;
  if (fs::exists(jinja, ec)) {
    auto text = read_template_file(jinja);
    if (!text.ok()) return text.status();
    out.sources_.push_back({std::string(kDefaultName), *std::move(text), jinja.string()});
  }
  // additional_chat_templates/*.jinja, one template per file named by its stem (as transformers
  // globs it); other files there are not templates. Sorted: directory order is arbitrary.
  const fs::path additional = model_dir / kAdditionalDir;
  if (fs::is_directory(additional, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(additional, ec)) {
      if (entry.path().extension() == ".jinja") files.push_back(entry.path());
    }
    if (ec)
      return absl::NotFoundError(str_cat(additional.string(), ": cannot list: ", ec.message()));
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      auto text = read_template_file(file);
      if (!text.ok()) return text.status();
      out.sources_.push_back({file.stem().string(), *std::move(text), file.string()});
    }
  }
  const fs::path json = model_dir / kJsonFile;
  if (fs::exists(json, ec)) {
    auto text = json_file_template(json);
    if (!text.ok()) return text.status();
    out.sources_.push_back({std::string(kDefaultName), *std::move(text),
                            str_cat(json.string(), " field chat_template")});
  }
  if (absl::Status s = add_config_templates(tokenizer_config, config_path, out.sources_); !s.ok())
    return s;
  return out;
}

absl::StatusOr<ChatTemplateSources> ChatTemplateSources::from_file(const fs::path& file) {
  auto text = read_template_file(file);
  if (!text.ok()) return text.status();
  ChatTemplateSources out;
  out.where_ = file.string();
  out.sources_.push_back({std::string(kDefaultName), *std::move(text), file.string()});
  return out;
}

std::vector<std::string> ChatTemplateSources::names() const {
  std::set<std::string> names;
  for (const auto& s : sources_) names.insert(s.name);
  return {names.begin(), names.end()};
}

absl::StatusOr<ChatTemplateSource> ChatTemplateSources::select(std::string_view name) const {
  if (sources_.empty()) {
    return absl::NotFoundError(str_cat(where_, " has no chat template (looked for ", kJinjaFile,
                                       ", ", kJsonFile,
                                       " and tokenizer_config.json's chat_template)"));
  }
  const ChatTemplateSource* chosen = nullptr;
  std::string conflicts;
  size_t line = 0;
  for (const auto& s : sources_) {
    if (s.name != name) continue;
    if (chosen == nullptr) {
      chosen = &s;
    } else if (s.text != chosen->text) {
      if (line == 0) line = first_differing_line(chosen->text, s.text);
      conflicts += str_cat(" and ", s.origin);
    }
  }
  if (chosen == nullptr) {
    std::string listing;
    for (const std::string& n : names()) {
      if (!listing.empty()) listing += ", ";
      listing += n + " (";
      bool first = true;
      for (const auto& s : sources_) {
        if (s.name != n) continue;
        listing += str_cat(first ? "" : "; ", s.origin);
        first = false;
      }
      listing += ")";
    }
    return absl::InvalidArgumentError(
        str_cat("no chat template named '", name, "'; ", where_, " has: ", listing));
  }
  if (!conflicts.empty()) {
    return absl::FailedPreconditionError(
        str_cat("conflicting template sources for chat template '", name, "': ", chosen->origin,
                conflicts, " differ (first at line ", line,
                "); delete or fix all but one, or choose a template explicitly"));
  }
  return *chosen;
}

}  // namespace weft
