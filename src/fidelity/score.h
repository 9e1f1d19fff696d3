#pragma once
#include <cstdint>
#include <vector>

// The arithmetic of fidelity, over plain float rows: one scored position's KL divergence,
// top-1 agreement and next-token probabilities, a whole text's summary with uncertainties
// as llama-perplexity states them, and the compact reference (top-k plus the rest mass).
// No engine, no file: tests check every figure by hand.
namespace edgeprobe::fidelity {

// One scored position: the reference's distribution P against the model's Q.
struct PositionScore {
  double kld = 0;         // KL(P || Q) in nats
  bool same_top = false;  // argmax P == argmax Q (the first index of the largest, both)
  double nll = 0;         // -ln Q(next): the model's loss on the actual next token
  double nll_ref = 0;     // -ln P(next)
  // Against a compact reference: the KL with its rest term estimated from the stored samples
  // of the rest (unbiased); against a full one, equal to kld.
  double kld_sampled = 0;
};

// From full logit rows (n_vocab floats each). The softmaxes are computed in float
// exponentials summed in double, as llama-perplexity does; the KL sum is over the whole
// vocabulary (llama-perplexity skips terms with ln P <= -16: a difference far below its
// quantized base's own).
PositionScore score_full(const float* ref_logits, const float* model_logits, int n_vocab, int32_t next);

// The reference at one position, kept compactly: its top-k tokens by probability (highest
// first; ties by lower id) with their log-probabilities, the probability of everything else
// (the rest mass, summed directly so a tiny one keeps its precision) and ln P(next).
// Beside them, `samples` tokens drawn (with replacement, by a generator seeded with `seed`)
// from the reference's distribution restricted to the rest, with their ln P: what makes the
// rest's share of the KL estimable without bias.
struct CompactRow {
  std::vector<int32_t> ids;
  std::vector<float> logp;
  float rest = 0;       // P(not in the top k), in [0, 1]
  float next_logp = 0;  // ln P(next token)
  std::vector<int32_t> sample_ids;
  std::vector<float> sample_logp;
};
CompactRow compact_row(const float* ref_logits, int n_vocab, int top_k, int32_t next, int samples = 0,
                       uint64_t seed = 0);

// Against a compact reference the rest is one bucket: KL over {top-k tokens, rest} with
// P(rest) against Q(rest). By the log-sum inequality, sum over the rest of P_i ln(P_i/Q_i) >=
// P(rest) ln(P(rest)/Q(rest)), so this KL is a lower bound of the full one; it is exact
// when the reference put no mass outside its top k. Top-1 is exact (the reference's top is
// ids[0]); so are nll, nll_ref and Δp. kld_sampled replaces the rest's bucket term with
// P(rest) times the mean of ln(P_i/Q_i) over the row's samples of the rest: an unbiased
// estimate of the full KL (the bucket term when the row holds no samples).
PositionScore score_compact(const CompactRow& ref, const float* model_logits, int n_vocab, int32_t next);

// A mean and its standard error.
struct Estimate {
  double value = 0, err = 0;
};

// A text's figures, from its scored positions in order.
struct Summary {
  int64_t positions = 0;
  Estimate kld;          // mean KL(ref || model), nats
  Estimate kld_sampled;  // mean of the positions' kld_sampled
  double kld_median = 0, kld_p99 = 0, kld_max = 0;
  Estimate same_top;      // fraction of positions whose top-1 agree, 0..1
  Estimate delta_p;       // mean of Q(next) - P(next), 0..1 scale
  Estimate ln_ppl_ratio;  // ln(PPL/PPL_ref), with the two losses' covariance
  Estimate ppl, ppl_ref;
};

// Uncertainties as llama-perplexity writes them: a mean's is sqrt(var/(n-1)) (0 for 10
// positions or fewer), top-1's the binomial sqrt(p(1-p)/(n-1)), ln(PPL/PPL_ref)'s from both
// variances less twice their covariance; percentiles interpolate linearly between the
// sorted values (its rule, so p99 and the median compare).
Summary summarize(const std::vector<PositionScore>& scores);

// The value at `fraction` (0..1) of sorted values, linearly interpolated.
double percentile(const std::vector<double>& sorted, double fraction);

}  // namespace edgeprobe::fidelity
