#include "core/bounded_json.h"

#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

// Builds the DOM from nlohmann's SAX events. nlohmann's SAX parser keeps its own state on the
// heap, so neither parsing nor building recurses; every container open on the way down is a Frame.
template <class Json>
class BoundedDomBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  BoundedDomBuilder(std::string_view source, const JsonLimits& limits)
      : source_(source), limits_(limits) {}

  bool null() { return place(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return place(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return place(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return place(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return place(Json(v)) != nullptr; }
  bool string(string_t& v) { return place(Json(std::move(v))) != nullptr; }
  bool binary(binary_t&) { return fail("binary values are not JSON"); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& key) {
    Frame& frame = stack_.back();
    if (!grow(frame)) return false;
    auto& members = frame.container->template get_ref<typename Json::object_t&>();
    if constexpr (kOrdered) {
      // ordered_map's own insert searches linearly (quadratic for a large object); the key set
      // already answers whether the key is new, so a new key is appended directly.
      using Container = typename Json::object_t::Container;
      Container& items = static_cast<Container&>(members);
      if (frame.keys.insert(key).second) {
        items.emplace_back(key, nullptr);
        slot_ = &items.back().second;
      } else {
        if (limits_.reject_duplicate_keys) return duplicate(key);
        slot_ = &members.find(key)->second;  // the last value wins, as in Python's json
      }
    } else {
      auto [it, inserted] = members.emplace(key, nullptr);
      if (!inserted && limits_.reject_duplicate_keys) return duplicate(key);
      slot_ = &it->second;
    }
    frame.key = std::move(key);
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(absl::StrCat(source_, ": not valid JSON: ", e.what()));
    return false;
  }

  absl::Status error() const { return error_; }
  Json take() { return std::move(root_); }

 private:
  static constexpr bool kOrdered = !std::is_same_v<Json, nlohmann::json>;

  struct Frame {
    Json* container;
    int64_t size = 0;
    std::string key;                        // the member being read (objects)
    std::unordered_set<std::string> keys;  // seen keys (ordered objects only)
  };

  bool fail(const std::string& what) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(absl::StrCat(source_, ": ", what));
    return false;
  }

  bool duplicate(const std::string& key) {
    std::string path;
    for (const Frame& frame : stack_) {
      if (&frame != &stack_.back() && frame.container->is_object()) absl::StrAppend(&path, frame.key, ".");
    }
    return fail(absl::StrCat("duplicate key '", path, key, "'"));
  }

  bool grow(Frame& frame) {
    if (++frame.size > limits_.max_container_size) {
      return fail(absl::StrCat(frame.container->is_object() ? "an object has" : "an array has",
                               " more than ", limits_.max_container_size,
                               frame.container->is_object() ? " members" : " elements"));
    }
    return true;
  }

  // Puts `value` where the next value goes (the root, the next array element, or the slot of the
  // last key); returns where it now lives, or nullptr past a limit.
  Json* place(Json value) {
    if (++values_ > limits_.max_values) {
      fail(absl::StrCat("more than ", limits_.max_values, " values"));
      return nullptr;
    }
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& frame = stack_.back();
    if (frame.container->is_array()) {
      if (!grow(frame)) return nullptr;
      auto& elements = frame.container->template get_ref<typename Json::array_t&>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    *slot_ = std::move(value);
    return slot_;
  }

  bool open(Json empty) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      return fail(absl::StrCat("arrays/objects nested deeper than ", limits_.max_depth, " levels"));
    }
    Json* container = place(std::move(empty));
    if (container == nullptr) return false;
    stack_.push_back(Frame{container});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string source_;
  const JsonLimits& limits_;
  Json root_;
  std::vector<Frame> stack_;
  Json* slot_ = nullptr;
  int64_t values_ = 0;
  absl::Status error_;
};

}  // namespace

template <class Json>
absl::StatusOr<Json> parse_json_bounded(std::string_view text, std::string_view source,
                                        const JsonLimits& limits) {
  BoundedDomBuilder<Json> builder(source, limits);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
  if (!ok || !builder.error().ok()) {
    if (!builder.error().ok()) return builder.error();
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": not valid JSON"));
  }
  return builder.take();
}

template absl::StatusOr<nlohmann::json> parse_json_bounded<nlohmann::json>(std::string_view,
                                                                           std::string_view,
                                                                           const JsonLimits&);
template absl::StatusOr<nlohmann::ordered_json> parse_json_bounded<nlohmann::ordered_json>(
    std::string_view, std::string_view, const JsonLimits&);

}  // namespace weft
