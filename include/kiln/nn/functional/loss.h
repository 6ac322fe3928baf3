// kiln::nn::functional losses (torch.nn.functional names and argument order; the deprecated
// size_average/reduce arguments are left out, `reduction` is an enum instead of a string).
#pragma once

#include "kiln/tensor.h"

namespace kiln::nn::functional {

enum class Reduction { None, Mean, Sum };

// input [N, C] or [N, C, d1, ...] log-probabilities (or [C] with a 0-dim target), target class
// indices (int64) shaped like input without C. Targets equal to ignore_index contribute nothing;
// Mean divides by the summed weights of the counted targets. Fused CPU kernel.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);
// log_softmax over dim 1 followed by nll_loss. target: class indices (integer tensor shaped like
// input without C) or class probabilities (floating tensor shaped like input). label_smoothing
// mixes the target with the uniform distribution.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// input are probabilities in [0, 1]; log terms are clamped at -100 (as PyTorch).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            Reduction reduction = Reduction::Mean);
// Numerically stable on logits; pos_weight (broadcast over the last dim) weights positive terms.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {},
                                        Reduction reduction = Reduction::Mean,
                                        const Tensor& pos_weight = {});
// input is log-probabilities; target probabilities (log-probabilities when log_target).
// Reduction::Mean averages over all elements, as PyTorch's "mean" (use batchmean by dividing the
// Sum by the batch size).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true,
                        bool full = false, double eps = 1e-8,
                        Reduction reduction = Reduction::Mean);
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         bool full = false, double eps = 1e-6,
                         Reduction reduction = Reduction::Mean);
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             double margin = 0.0, Reduction reduction = Reduction::Mean);
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin = 0.0, Reduction reduction = Reduction::Mean);
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = Reduction::Mean);
Tensor soft_margin_loss(const Tensor& input, const Tensor& target,
                        Reduction reduction = Reduction::Mean);
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin = 1.0, double p = 2.0, double eps = 1e-6,
                           bool swap = false, Reduction reduction = Reduction::Mean);
// Connectionist temporal classification: log_probs [T, N, C] (or [T, C]) log-softmax outputs,
// targets [N, S] (padded) or 1-D concatenated, input_lengths / target_lengths int64 [N]. Mean
// divides each loss by its target length (clamped to 1), then averages over the batch;
// zero_infinity replaces infinite losses (impossible alignments) by 0.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0,
                Reduction reduction = Reduction::Mean, bool zero_infinity = false);
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const Tensor& weight = {},
                                   Reduction reduction = Reduction::Mean);

}  // namespace kiln::nn::functional
