// TrainConfig as the trace header's flat `config` object (docs/trace-format.md): every
// setting that must agree across ranks, so that the config-mismatch analyzer can diff it.
// Left out on purpose: `nproc` (a launcher setting; ranks started by the launcher have 0)
// and `log_every` (terminal output only). The backend is written as resolved, so a rank
// that defaulted to gloo and one that asked for it compare equal.
#include "trainer/train_config.h"

namespace dsdiag::trainer {
namespace {

std::string ResolvedBackend(const TrainConfig& c) {
  if (!c.backend.empty()) return c.backend;
  return c.device == "cuda" ? "nccl" : "gloo";
}

// The --inject specs in one scalar, space-separated (a spec never holds a space).
std::string JoinedInjects(const inject::InjectPlan& plan) {
  std::string out;
  for (const inject::InjectSpec& spec : plan.specs()) {
    if (!out.empty()) out += ' ';
    out += spec.text;
  }
  return out;
}

}  // namespace

trace::JsonValue TrainConfig::ToJson() const {
  trace::JsonValue j = trace::JsonValue::Object();
  j.Set("steps", steps);
  j.Set("epochs", epochs);
  j.Set("batch_size", batch_size);
  j.Set("workers", workers);
  j.Set("seed", seed);
  j.Set("amp", amp);
  j.Set("clip_norm", clip_norm);
  j.Set("ckpt_every", ckpt_every);
  j.Set("resume", resume);
  j.Set("out", out);
  j.Set("timeout_s", timeout_s);
  j.Set("device", device);
  j.Set("backend", ResolvedBackend(*this));
  j.Set("probes", probes);
  j.Set("inject", JoinedInjects(inject));
  j.Set("dataset_size", dataset_size);
  j.Set("vocab", vocab);
  j.Set("seq_len", seq_len);
  j.Set("d_model", d_model);
  j.Set("n_layers", n_layers);
  j.Set("n_heads", n_heads);
  j.Set("n_experts", n_experts);
  j.Set("top_k", top_k);
  j.Set("d_ff", d_ff);
  j.Set("dropout", dropout);
  j.Set("lr", lr);
  j.Set("health_every", health_every);
  return j;
}

}  // namespace dsdiag::trainer
