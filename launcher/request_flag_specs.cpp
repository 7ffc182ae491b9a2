// request_flag_specs() (request_flags.h) lives in weft_launcher, beside the command table that
// lists it; request_from_flags needs the constraint library and is built into the binary.
#include "launcher/banned_phrase_flags.h"
#include "launcher/prompt_input.h"
#include "launcher/request_flags.h"

namespace weft {

std::vector<FlagSpec> request_flag_specs() {
  std::vector<FlagSpec> flags = prompt_flag_specs();
  flags.push_back({"json-schema", "FILE", "constrain the output to JSON valid under this schema"});
  flags.push_back({"json-object", "", "constrain the output to any JSON object or array"});
  flags.push_back({"regex", "R", "constrain the output to match this regular expression"});
  flags.push_back(
      {"grammar", "FILE", "constrain the output to this EBNF (GBNF) grammar (root rule: root)"});
  flags.push_back({"choice", "A|B|C", "constrain the output to one of these strings"});
  flags.push_back(banned_phrases_flag_spec());
  return flags;
}

}  // namespace weft
