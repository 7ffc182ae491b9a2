// Ids of response objects ("chatcmpl-...", "cmpl-...", "call_..."): the prefix, a per-process
// random salt and a counter, in hex, so ids never repeat within a process and rarely across.
#pragma once

#include <string>

namespace weft {

std::string random_response_id(const char* prefix);

}  // namespace weft
