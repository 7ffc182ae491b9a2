// The Hugging Face quantized checkpoints (tests/golden/models/ct_*, written by
// hf_quant_generate.py with the compressed-tensors package) against transformers' float32 forward
// over their exactly dequantized weights; also the GPTQ and AWQ ones (gptq_*, awq_*): the one comparison the single-process test
// (hf_quantized_test.cpp) and the MPI job (tests/mpi/mpi_hf_quantized_check.cpp) run.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/checkpoint_quantization.h"
#include "golden_harness.h"

namespace weft::golden {

// Tolerances for a checkpoint, on logits (prompt positions) and on the top-5 logprobs of greedy
// steps (twice the logits': a logprob moves by its logit's error plus at most the largest error
// through the log-sum-exp). The engine runs weft's default kernels, which meet F32 activations
// (block dtypes dequantized to F32 inside the kernel, int8 rows times their F32 scale), so its
// weights are the reference's exactly, as weft holds every format exactly: F32 (dequantized at
// load), int8, symmetric int4 (scale exact in f16, minimum -8 * scale too), int4 with zero points
// (I4G*F: F32 scale and minimum). Only F32 summation order differs: the golden tolerance 2e-3.
struct QuantizedTolerance {
  float logits;
  float logprobs;
};
QuantizedTolerance quantized_tolerance(const CheckpointQuantization& q);

// Per prompt: the greedy continuation must equal the reference's up to the first step whose
// reference top-2 logit gap is below 2 * tolerance.logits (where the kernel's rounding may pick
// either; the comparison stops there), and each compared step's top-5 logprobs must match
// log_softmax of the reference logits within tolerance.logprobs. Returns the failures (empty: all
// good) and reports in *compared the number of greedy steps compared and in *worst the largest
// logprob error.
std::vector<std::string> compare_greedy_to_reference(const GreedyRun& run, const Reference& ref,
                                                     const QuantizedTolerance& tolerance,
                                                     int* compared, float* worst);

}  // namespace weft::golden
