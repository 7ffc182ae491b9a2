// Bounds on what one grammar may cost. Specs come from requests, so each bound turns a grammar
// that would take unbounded time or memory into an InvalidArgument naming the request
// parameter, before (size, depth) or while (time, memory) it is compiled.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "constrain/grammar_spec.h"

namespace weft {

struct GrammarLimits {
  // Schema, pattern, grammar or structural-tag text; for a choice list, all choices together.
  size_t max_spec_bytes = size_t{1} << 20;
  int32_t max_choices = 16384;
  // Nesting of a JSON schema or structural tag document (objects and arrays).
  int32_t max_schema_depth = 48;
  // The grammar a spec converts to, in xgrammar's EBNF text (a schema with thousands of
  // properties or a long enum grows here before the vocabulary is involved).
  size_t max_grammar_bytes = size_t{8} << 20;
  // Memory of one compiled grammar (xgrammar's estimate: grammar plus mask cache).
  size_t max_compiled_bytes = size_t{512} << 20;
  // Wall time of one compile. xgrammar cannot be interrupted: a compile past it is abandoned
  // (the caller gets the error at once; the compile finishes on its own thread and is dropped),
  // and the spec is refused at once from then on.
  double max_compile_seconds = 10.0;
  // Abandoned compiles still running; while this many are, new compiles are refused, so a
  // stream of hostile specs cannot pile up threads.
  int32_t max_abandoned_compiles = 2;
};

// The checks that need no compile: sizes, counts, option ranges, and for JSON documents
// (schema, structural tag) that the text is JSON of bounded depth (and a schema an object or
// boolean). Errors are InvalidArgument starting with spec.parameter().
absl::Status check_grammar_spec(const GrammarSpec& spec, const GrammarLimits& limits);

}  // namespace weft
