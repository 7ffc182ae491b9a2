// Propagation helpers for absl::Status / absl::StatusOr at module boundaries.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define WEFT_STATUS_CONCAT_INNER(a, b) a##b
#define WEFT_STATUS_CONCAT(a, b) WEFT_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define WEFT_RETURN_IF_ERROR(expr)                      \
  do {                                                  \
    ::absl::Status weft_status_ = (expr);               \
    if (!weft_status_.ok()) return weft_status_;        \
  } while (0)

// `WEFT_ASSIGN_OR_RETURN(auto x, f());` declares x from an OK StatusOr or returns its status.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr) \
  WEFT_ASSIGN_OR_RETURN_IMPL(WEFT_STATUS_CONCAT(weft_statusor_, __LINE__), lhs, expr)
#define WEFT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
