// kiln::nn::functional::ctc_loss: the CTC forward (alpha) recursion in log space over the
// blank-extended target, per sample, with tensor ops (so it is differentiable through them);
// emissions are fetched with the Embedding primitive.
#include <limits>

#include "kiln/nn/functional/loss.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

// log(e^a + e^b + e^c) elementwise, -inf when all are -inf.
Tensor logaddexp3(const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor m = kiln::maximum(kiln::maximum(a, b), c);
  Tensor safe = kiln::where(kiln::isinf(m), Scalar(0.0), m);
  Tensor s = kiln::exp(a - safe) + kiln::exp(b - safe) + kiln::exp(c - safe);
  return kiln::where(kiln::isinf(m), m, safe + kiln::log(s));
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v;
  for (const Scalar& s : t.tolist_flat()) v.push_back(s.to<int64_t>());
  return v;
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction,
                bool zero_infinity) {
  const char* op = "ctc_loss";
  KILN_CHECK(log_probs.defined() && log_probs.is_floating_point(), "[", op,
             "] expected floating point log_probs");
  KILN_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, "[", op,
             "] log_probs must be [T, N, C] or [T, C], but got ", log_probs.sizes());
  const bool batched = log_probs.dim() == 3;
  Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  const int64_t t_max = lp.size(0), n = lp.size(1), c = lp.size(2);
  KILN_CHECK(blank >= 0 && blank < c, "[", op, "] blank must be in label range");
  KILN_CHECK(targets.defined() && !targets.is_floating_point() && input_lengths.defined() &&
                 target_lengths.defined(),
             "[", op, "] targets and lengths must be integer tensors");
  const std::vector<int64_t> il = ints_of(input_lengths), tl = ints_of(target_lengths);
  const std::vector<int64_t> tg = ints_of(targets);
  KILN_CHECK(static_cast<int64_t>(il.size()) == n && static_cast<int64_t>(tl.size()) == n, "[", op,
             "] input_lengths and target_lengths must have ", n, " elements");
  // Batched: [N, S] padded or 1-D concatenated; unbatched: [S].
  const bool padded = batched ? targets.dim() == 2 : true;
  const int64_t stride = padded ? targets.size(-1) : 0;
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<Tensor> losses;
  int64_t offset = 0;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t len = tl[b], tb = il[b];
    KILN_CHECK(tb >= 0 && tb <= t_max, "[", op, "] Expected input_lengths to have value at most ",
               t_max, ", but got value ", tb);
    KILN_CHECK(
        len >= 0 && (padded ? len <= stride : offset + len <= static_cast<int64_t>(tg.size())), "[",
        op, "] target length ", len, " is out of range for the targets");
    // Blank-extended labels l' = [blank, y1, blank, y2, ..., blank].
    std::vector<int64_t> ext(2 * len + 1, blank);
    std::vector<double> skip(2 * len + 1, 0.0);  // 1 where s-2 -> s is allowed
    for (int64_t i = 0; i < len; ++i) {
      const int64_t y = tg[padded ? b * stride + i : offset + i];
      KILN_CHECK(y >= 0 && y < c && y != blank, "[", op, "] target label ", y,
                 " is out of range or equal to blank");
      ext[2 * i + 1] = y;
      if (i > 0 && y != ext[2 * i - 1]) skip[2 * i + 1] = 1;
    }
    if (!padded) offset += len;
    const int64_t s_len = 2 * len + 1;
    if (tb == 0) {
      losses.push_back(kiln::full({}, len == 0 ? 0.0 : -ninf, lp.options()));
      continue;
    }
    // Emissions E [T_b, S]: rows of lp[:, b, :]^T picked by the extended labels.
    Tensor table = lp.select(1, b).narrow(0, 0, tb).t();            // [C, T_b]
    Tensor em = detail::embedding_op(table, from_vector(ext)).t();  // [T_b, S]
    Tensor skip_ok = from_vector(skip).to(kBool);
    Tensor first = kiln::full({s_len}, ninf, lp.options());
    Tensor pos = kiln::arange(s_len);
    Tensor alpha = kiln::where(pos < std::min<int64_t>(2, s_len), em.select(0, 0), first);
    Tensor pad1 = kiln::full({1}, ninf, lp.options()), pad2 = kiln::full({2}, ninf, lp.options());
    for (int64_t t = 1; t < tb; ++t) {
      Tensor a1 = kiln::cat({pad1, alpha.narrow(0, 0, s_len - 1)});
      Tensor a2 = s_len >= 2 ? kiln::cat({pad2, alpha.narrow(0, 0, s_len - 2)}) : first;
      a2 = kiln::where(skip_ok, a2, first);
      alpha = logaddexp3(alpha, a1, a2) + em.select(0, t);
    }
    Tensor end = s_len >= 2 ? logaddexp3(alpha.select(0, s_len - 1), alpha.select(0, s_len - 2),
                                         first.select(0, 0))
                            : alpha.select(0, 0);
    losses.push_back(-end);
  }
  Tensor loss = n == 0 ? kiln::empty({0}, lp.options()) : kiln::stack(losses);
  if (zero_infinity) loss = kiln::where(kiln::isinf(loss), Scalar(0.0), loss);
  if (reduction == Reduction::None) return batched ? loss : loss.squeeze(0);
  if (reduction == Reduction::Sum) return loss.sum();
  std::vector<double> div;
  for (int64_t v : tl) div.push_back(static_cast<double>(std::max<int64_t>(v, 1)));
  return (loss / from_vector(div).to(loss.dtype())).mean();
}

}  // namespace kiln::nn::functional
