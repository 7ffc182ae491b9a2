// Incremental structure of a JSON value that a model is writing, one byte at a time: how deep
// the containers are nested and whether a string is open. It checks nothing else; the complete
// text is validated by a real JSON parser once the scanner sees its end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace weft {

class JsonObjectScanner {
 public:
  // The next byte of a value whose first byte was '{' or '['. True when `c` closes it.
  bool feed(char c);
  // Open containers ('{' / '[') after the bytes fed so far.
  int depth() const { return depth_; }
  bool in_string() const { return in_string_; }

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
};

// The start of a tool call object as models write it: '{' "name" ':' <string> ',' ("arguments"
// | "parameters") ':' '{', whitespace allowed between tokens. kIncomplete: `text` is a prefix of
// such a start (more text may complete it); kMismatch: it cannot become one (another key order,
// arguments that are not an object, ...), and the object must be read whole.
enum class CallHeaderMatch { kIncomplete, kMatch, kMismatch };

struct CallHeader {
  std::string name;         // JSON-decoded
  size_t arguments_start = 0;  // offset of the arguments' '{' in the text
};

CallHeaderMatch match_call_header(std::string_view text, CallHeader& out);

}  // namespace weft
