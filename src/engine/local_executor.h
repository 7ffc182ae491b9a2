// The StepExecutor of a single process holding the whole model (world size 1): each plan runs
// to completion when submitted.
#pragma once

#include <deque>

#include "engine/model_runner.h"
#include "engine/step_executor.h"

namespace weft {

class LocalExecutor final : public StepExecutor {
 public:
  explicit LocalExecutor(ModelRunner& runner) : runner_(runner) {}
  absl::Status submit(const StepPlan& plan) override {
    absl::StatusOr<Tensor> logits = runner_.execute(plan);
    if (!logits.ok()) return logits.status();
    done_.push_back(*std::move(logits));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> collect() override {
    if (done_.empty()) return absl::FailedPreconditionError("collect() with no step submitted");
    Tensor logits = std::move(done_.front());
    done_.pop_front();
    return logits;
  }

 private:
  ModelRunner& runner_;
  std::deque<Tensor> done_;
};

}  // namespace weft
