#include "tokenizer/post_processor.h"

#include <string>

#include "absl/container/flat_hash_map.h"

namespace weft {
namespace {

class TemplateProcessor final : public PostProcessor {
 public:
  // A piece of the template: the input sequence (ids empty) or a special token's ids.
  struct Item {
    bool is_sequence;
    std::vector<int32_t> ids;
  };
  explicit TemplateProcessor(std::vector<Item> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + items_.size());
    for (const auto& item : items_) {
      if (item.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    ids = std::move(out);
  }

 private:
  std::vector<Item> items_;
};

class NoopProcessor final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&) const override {}
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

absl::StatusOr<std::unique_ptr<PostProcessor>> make_template(const nlohmann::json& j,
                                                             const JsonPath& where) {
  // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
  absl::flat_hash_map<std::string, std::vector<int32_t>> specials;
  const auto sit = j.find("special_tokens");
  if (sit != j.end() && !sit->is_null()) {
    if (!sit->is_object()) return where.child("special_tokens").error("expected an object");
    for (const auto& [name, spec] : sit->items()) {
      const JsonPath p = where.child("special_tokens").child(name);
      if (!spec.is_object() || !spec.contains("ids") || !spec["ids"].is_array()) {
        return p.child("ids").error("expected an array of ids");
      }
      std::vector<int32_t> ids;
      for (const auto& id : spec["ids"]) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > kMaxTokenId) {
          return p.child("ids").error(str_cat("expected integer ids in [0, ", kMaxTokenId, "]"));
        }
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
      specials[name] = std::move(ids);
    }
  }
  const auto tit = j.find("single");
  const JsonPath single = where.child("single");
  if (tit == j.end() || !tit->is_array())
    return single.error("expected an array of template pieces");
  std::vector<TemplateProcessor::Item> items;
  for (size_t i = 0; i < tit->size(); ++i) {
    const auto& piece = (*tit)[i];
    const JsonPath p = single.index(i);
    if (piece.is_object() && piece.contains("Sequence")) {
      items.push_back({true, {}});
    } else if (piece.is_object() && piece.contains("SpecialToken")) {
      const auto& st = piece["SpecialToken"];
      if (!st.is_object() || !st.contains("id") || !st["id"].is_string()) {
        return p.child("SpecialToken").child("id").error("expected a string");
      }
      const std::string name = st["id"].get<std::string>();
      const auto it = specials.find(name);
      if (it == specials.end()) {
        return p.child("SpecialToken")
            .child("id")
            .error(str_cat("special token \"", name, "\" is not listed in special_tokens"));
      }
      items.push_back({false, it->second});
    } else {
      return p.error("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(items));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j,
                                                                   const JsonPath& where) {
  if (j.is_null()) return std::unique_ptr<PostProcessor>();
  auto type = where.get_type(j);
  if (!type.ok()) return type.status();
  if (*type == "TemplateProcessing") return make_template(j, where);
  if (*type == "ByteLevel") return std::make_unique<NoopProcessor>();
  if (*type == "Sequence") {
    const auto it = j.find("processors");
    if (it == j.end() || !it->is_array())
      return where.child("processors").error("expected an array");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      auto part = make_post_processor((*it)[i], where.child("processors").index(i));
      if (!part.ok()) return part.status();
      if (*part) parts.push_back(std::move(*part));
    }
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  return where.child("type").error(
      str_cat("unsupported post-processor type \"", *type,
              "\" (supported: TemplateProcessing, ByteLevel, Sequence)"));
}

}  // namespace weft
