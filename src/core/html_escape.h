// HTML escaping as markupsafe (Jinja's escape filter) does it: & < > " ' become &amp; &lt; &gt;
// &#34; &#39;, safe in element text and in quoted attribute values.
#pragma once

#include <string>
#include <string_view>

namespace weft {

std::string html_escape(std::string_view text);

}  // namespace weft
