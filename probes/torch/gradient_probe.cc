#include "probes/torch/gradient_probe.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "probes/fingerprint.h"
#include "probes/probe_timer.h"
#include "probes/records/gradient_records.h"
#include "probes/records/params_record.h"
#include "trace/record_types.h"
#include "trace/records/fp_record.h"

namespace dsdiag::probes {
namespace {

namespace fp_what = trace::records::fp_what;
namespace fp_why = trace::records::fp_why;

const char* DtypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "f32";
    case at::kDouble:
      return "f64";
    case at::kHalf:
      return "f16";
    case at::kBFloat16:
      return "bf16";
    case at::kLong:
      return "i64";
    case at::kInt:
      return "i32";
    default:
      return "other";
  }
}

// A tensor's bytes in a form that can be hashed in place.
at::Tensor HashableView(const at::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) return t;
  return t.contiguous().cpu();
}

// Adds the squares of a contiguous f32 CPU tensor's elements to *sum (in double): a plain
// loop over the bytes in place. A `norm()` per parameter cost a dispatch and a sync each,
// a few microseconds times every parameter, every step. False for any other tensor.
bool AddSquares(const at::Tensor& t, double* sum) {
  if (!t.device().is_cpu() || t.scalar_type() != at::kFloat || !t.is_contiguous()) return false;
  const float* v = t.data_ptr<float>();
  const int64_t n = t.numel();
  double lanes[4] = {0, 0, 0, 0};  // independent sums: the loop is not one long dependency
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) lanes[k] += double(v[i + k]) * double(v[i + k]);
  for (; i < n; ++i) lanes[0] += double(v[i]) * double(v[i]);
  *sum += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  return true;
}

}  // namespace

GradientProbe::GradientProbe(Session* session, std::vector<std::string> names,
                             std::vector<at::Tensor> params, std::vector<std::vector<int>> buckets,
                             GradientProbeOptions options)
    : session_(session),
      names_(std::move(names)),
      params_(std::move(params)),
      buckets_(std::move(buckets)),
      options_(options) {
  if (buckets_.empty()) {
    buckets_.emplace_back();
    for (size_t i = 0; i < params_.size(); ++i) buckets_.back().push_back(static_cast<int>(i));
  }
  WriteParamTable();
  HookParameters();
}

GradientProbe::~GradientProbe() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (hook_ids_[i] < 0) continue;
    try {
      params_[i].remove_hook(static_cast<unsigned>(hook_ids_[i]));
    } catch (const std::exception&) {
      // A tensor that no longer takes hooks: the hook only sets a flag nobody reads.
    }
  }
}

void GradientProbe::HookParameters() noexcept {
  took_part_ = std::make_shared<std::vector<uint8_t>>(params_.size(), 0);
  hook_ids_.assign(params_.size(), -1);
  if (!session_->on()) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    try {
      std::shared_ptr<std::vector<uint8_t>> flags = took_part_;
      hook_ids_[i] = params_[i].register_hook([flags, i](const at::Tensor&) { (*flags)[i] = 1; });
    } catch (const std::exception&) {
      hook_ids_[i] = -1;  // does not require grad: falls back to "is .grad defined"
    }
  }
}

bool GradientProbe::TookPart(size_t i) const {
  if (hook_ids_[i] >= 0) return (*took_part_)[i] != 0;
  return params_[i].grad().defined();
}

void GradientProbe::WriteParamTable() noexcept {
  if (!session_->on()) return;
  records::ParamsRecord r;
  r.names = names_;
  r.buckets = buckets_;
  r.replicas = options_.replicas;
  std::sort(r.replicas.begin(), r.replicas.end());
  for (const auto& p : params_) {
    r.shapes.emplace_back(p.sizes().begin(), p.sizes().end());
    r.dtypes.emplace_back(DtypeName(p.scalar_type()));
  }
  records::WriteParams(session_, r);
}

void GradientProbe::AfterBackward() noexcept {
  if (!session_->on()) return;
  ProbeTimer timer(session_);
  try {
    missing_.clear();
    double sum_sq = 0;
    std::vector<at::Tensor> other_norms;  // of gradients the plain loop does not read
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!TookPart(i)) missing_.push_back(static_cast<int>(i));
      (*took_part_)[i] = 0;  // the next backward starts afresh
      const at::Tensor& g = params_[i].grad();
      if (!g.defined()) continue;
      if (!AddSquares(g, &sum_sq)) other_norms.push_back(g.detach().norm());
    }
    if (!other_norms.empty()) {
      // One reduction and one device sync for all of them, not one per parameter.
      const double n = at::stack(other_norms).norm().item<double>();
      sum_sq += n * n;
    }
    const double norm = std::sqrt(sum_sq);
    // Only a non-finite norm makes the per-parameter search worth its cost.
    std::vector<int> nonfinite;
    if (!std::isfinite(norm)) {
      for (size_t i = 0; i < params_.size(); ++i) {
        const at::Tensor& g = params_[i].grad();
        if (g.defined() && !at::isfinite(g).all().item<bool>())
          nonfinite.push_back(static_cast<int>(i));
      }
    }
    records::GradRecord r;
    // A float32, as torch.nn.utils.clip_grad_norm_ returns it: the gradients are float32s,
    // and the double sum's last nine digits are arithmetic, not measurement (written in
    // full, they cost a compressed trace ~5 bytes a step). Past float32's range: as is.
    r.norm = std::fabs(norm) <= std::numeric_limits<float>::max() ? double{float(norm)} : norm;
    r.n_missing = static_cast<int64_t>(missing_.size());
    // The list is written when it changes, not every step: MoE runs leave experts
    // unrouted for long stretches.
    if (first_backward_ || missing_ != last_written_missing_) {
      r.missing = &missing_;
      last_written_missing_ = missing_;
    }
    r.nonfinite = &nonfinite;
    records::WriteGrad(session_, r);
    first_backward_ = false;
  } catch (const std::exception& e) {
    session_->RecordError("gradient-probe", e.what());
  }
}

uint64_t GradientProbe::HashTensor(const at::Tensor& t) const {
  at::Tensor h = HashableView(t);
  return FingerprintBytes(h.data_ptr(), h.nbytes());
}

void GradientProbe::WriteFingerprints(std::string_view what, std::string_view why,
                                      bool grads) noexcept {
  if (!session_->on()) return;
  try {
    auto tensor_of = [&](size_t i) -> at::Tensor {
      return grads ? params_[i].grad() : params_[i].detach();
    };
    std::vector<uint64_t> hashes;
    if (session_->full()) {
      for (size_t i = 0; i < params_.size(); ++i) {
        at::Tensor t = tensor_of(i);
        hashes.push_back(t.defined() ? HashTensor(t) : 0);
      }
    } else {
      Fingerprinter fp;
      for (const auto& bucket : buckets_) {
        fp.Reset();
        for (int i : bucket) {
          at::Tensor t = tensor_of(i);
          if (!t.defined()) continue;
          at::Tensor h = HashableView(t);
          fp.Add(h.data_ptr(), h.nbytes());
        }
        hashes.push_back(fp.Digest());
      }
    }
    records::WriteFingerprints(session_, what, why, session_->full(), hashes);
  } catch (const std::exception& e) {
    session_->RecordError("fingerprint-probe", e.what());
  }
}

void GradientProbe::AfterSync() noexcept {
  ProbeTimer timer(session_);
  WriteFingerprints(fp_what::kGrad, fp_why::kAfterSync, true);
}

void GradientProbe::BeforeOptimizerStep() noexcept {
  if (!session_->on()) return;
  ProbeTimer timer(session_);
  WriteFingerprints(fp_what::kGrad, fp_why::kPreStep, true);
  if (params_fingerprinted_) WriteFingerprints(fp_what::kParam, fp_why::kPreStep, false);
  params_fingerprinted_ = false;
}

void GradientProbe::FingerprintParams(std::string_view why) noexcept {
  ProbeTimer timer(session_);
  WriteFingerprints(fp_what::kParam, why, false);
}

void GradientProbe::AfterOptimizerStep(int64_t step) noexcept {
  if (!session_->on()) return;
  ProbeTimer timer(session_);
  params_fingerprinted_ =
      session_->full() || (options_.param_fp_every > 0 && step % options_.param_fp_every == 0);
  if (params_fingerprinted_) FingerprintParams(fp_why::kPeriodic);
}

}  // namespace dsdiag::probes
