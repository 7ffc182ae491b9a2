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
    absl::StatusOr<StepOutput> output = runner_.execute(plan);
    if (!output.ok()) return output.status();
    done_.push_back(*std::move(output));
    return absl::OkStatus();
  }
  absl::StatusOr<StepOutput> collect() override {
    if (done_.empty()) return absl::FailedPreconditionError("collect() with no step submitted");
    StepOutput output = std::move(done_.front());
    done_.pop_front();
    return output;
  }

 private:
  ModelRunner& runner_;
  std::deque<StepOutput> done_;
};

}  // namespace weft
