#include "trainer/torch/moe_model.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "trainer/train_config.h"

namespace dsdiag::trainer {
namespace {

void Require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("model configuration: " + what);
}

}  // namespace

ModelOptions ModelOptionsFrom(const TrainConfig& config) {
  ModelOptions o;
  o.vocab = config.vocab;
  o.seq_len = config.seq_len;
  o.d_model = config.d_model;
  o.n_layers = config.n_layers;
  o.n_heads = config.n_heads;
  o.n_experts = config.n_experts;
  o.top_k = config.top_k;
  o.d_ff = config.d_ff;
  o.dropout = config.dropout;
  Require(o.vocab >= 2, "vocab must be at least 2, got " + std::to_string(o.vocab));
  Require(o.seq_len >= 1, "seq_len must be at least 1, got " + std::to_string(o.seq_len));
  Require(o.n_layers >= 1, "n_layers must be at least 1");
  Require(o.n_heads >= 1 && o.d_model % o.n_heads == 0, "d_model (" + std::to_string(o.d_model) +
                                                            ") must be a multiple of n_heads (" +
                                                            std::to_string(o.n_heads) + ")");
  Require(o.n_experts >= 1, "n_experts must be at least 1");
  Require(o.top_k >= 1 && o.top_k <= o.n_experts, "top_k must be in 1..n_experts (" +
                                                      std::to_string(o.n_experts) + "), got " +
                                                      std::to_string(o.top_k));
  Require(o.d_ff >= 1, "d_ff must be at least 1");
  Require(o.dropout >= 0 && o.dropout < 1, "dropout must be in [0, 1)");
  return o;
}

torch::Tensor DropoutWith(const torch::Tensor& x, double p, torch::Generator* rng) {
  if (rng == nullptr || p <= 0) return x;
  // The mask is drawn on the CPU generator in fp32 whatever x's device and dtype, so that
  // neither bf16 autocast nor the device changes which elements are dropped.
  torch::Tensor keep = torch::empty(x.sizes(), torch::kFloat).bernoulli_(1.0 - p, *rng);
  return x * keep.div_(1.0 - p).to(x.device(), x.scalar_type());
}

ExpertImpl::ExpertImpl(int d_model, int d_ff) {
  w_in_ = register_module("w_in", torch::nn::Linear(d_model, d_ff));
  w_out_ = register_module("w_out", torch::nn::Linear(d_ff, d_model));
}

torch::Tensor ExpertImpl::forward(const torch::Tensor& x) { return w_out_(torch::gelu(w_in_(x))); }

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelOptions& options)
    : n_heads_(options.n_heads), dropout_(options.dropout) {
  qkv_ = register_module("qkv", torch::nn::Linear(options.d_model, 3 * options.d_model));
  proj_ = register_module("proj", torch::nn::Linear(options.d_model, options.d_model));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x,
                                               const ForwardContext& context) {
  const int64_t b = x.size(0), t = x.size(1), d = x.size(2);
  const int64_t head_dim = d / n_heads_;
  std::vector<torch::Tensor> qkv = qkv_(x).chunk(3, /*dim=*/-1);
  auto heads = [&](const torch::Tensor& m) {
    return m.view({b, t, n_heads_, head_dim}).transpose(1, 2);  // [b, h, t, hd]
  };
  torch::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  torch::Tensor scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(head_dim));
  torch::Tensor future =
      torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  torch::Tensor y = torch::softmax(scores, -1).matmul(v);
  y = y.transpose(1, 2).contiguous().view({b, t, d});
  return DropoutWith(proj_(y), dropout_, context.dropout_rng);
}

MoeFeedForwardImpl::MoeFeedForwardImpl(const ModelOptions& options)
    : top_k_(options.top_k), dropout_(options.dropout) {
  router_ = register_module(
      "router",
      torch::nn::Linear(torch::nn::LinearOptions(options.d_model, options.n_experts).bias(false)));
  experts_list_ = register_module("experts", torch::nn::ModuleList());
  for (int e = 0; e < options.n_experts; ++e) {
    experts_.push_back(Expert(options.d_model, options.d_ff));
    experts_list_->push_back(experts_.back());
  }
  shared_ = register_module("shared", Expert(options.d_model, options.d_ff));
}

torch::Tensor MoeFeedForwardImpl::forward(const torch::Tensor& x, const ForwardContext& context,
                                          torch::Tensor* aux_loss) {
  const int64_t n_experts = static_cast<int64_t>(experts_.size());
  torch::Tensor flat = x.reshape({-1, x.size(-1)});  // [tokens, d]
  const int64_t tokens = flat.size(0);
  // Routing decisions in fp32 so that bf16 autocast does not flip close top-k choices.
  torch::Tensor probs = torch::softmax(router_(flat).to(torch::kFloat), -1);  // [tokens, E]
  auto [top_p, top_i] = probs.topk(top_k_, -1);
  torch::Tensor gate = top_p / top_p.sum(-1, /*keepdim=*/true);

  torch::Tensor out = torch::zeros({tokens, flat.size(1)}, flat.options().dtype(torch::kFloat));
  torch::Tensor routed_flat = top_i.reshape({-1});  // slot s of token n at n * k + s
  for (int64_t e = 0; e < n_experts; ++e) {
    torch::Tensor slots = (routed_flat == e).nonzero().reshape({-1});
    if (slots.numel() == 0) continue;  // no token here: this expert has no gradient
    torch::Tensor token_idx = slots.div(top_k_, "floor");
    torch::Tensor y = experts_[e](flat.index_select(0, token_idx)).to(torch::kFloat);
    torch::Tensor w = gate.reshape({-1}).index_select(0, slots).unsqueeze(1);
    out = out.index_add(0, token_idx, y * w);
  }
  if (!context.skip_shared_expert) out = out + shared_(flat).to(torch::kFloat);

  // Switch-style balancing loss: E * sum_e (share of routed slots) * (mean router prob).
  torch::Tensor share =
      torch::zeros({n_experts}, probs.options())
          .index_add(0, routed_flat, torch::ones_like(routed_flat, probs.options())) /
      double(routed_flat.numel());
  *aux_loss = *aux_loss + double(n_experts) * (share * probs.mean(0)).sum();

  out = DropoutWith(out, dropout_, context.dropout_rng);
  return out.to(x.scalar_type()).view(x.sizes());
}

DecoderBlockImpl::DecoderBlockImpl(const ModelOptions& options) {
  ln1_ = register_module(
      "ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({int64_t{options.d_model}})));
  attn_ = register_module("attn", CausalSelfAttention(options));
  ln2_ = register_module(
      "ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({int64_t{options.d_model}})));
  moe_ = register_module("moe", MoeFeedForward(options));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const ForwardContext& context,
                                        torch::Tensor* aux_loss) {
  torch::Tensor h = x + attn_(ln1_(x), context).to(x.scalar_type());
  return h + moe_(ln2_(h), context, aux_loss).to(h.scalar_type());
}

MoeDecoderImpl::MoeDecoderImpl(const ModelOptions& options) : options_(options) {
  embed_ = register_module("embed", torch::nn::Embedding(options.vocab, options.d_model));
  pos_ = register_module("pos", torch::nn::Embedding(options.seq_len, options.d_model));
  blocks_list_ = register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < options.n_layers; ++i) {
    blocks_.push_back(DecoderBlock(options));
    blocks_list_->push_back(blocks_.back());
  }
  ln_f_ = register_module(
      "ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({int64_t{options.d_model}})));
  head_ = register_module("head", torch::nn::Linear(options.d_model, options.vocab));
}

ModelOutput MoeDecoderImpl::forward(const torch::Tensor& tokens, const ForwardContext& context) {
  const int64_t t = tokens.size(1);
  torch::Tensor positions = torch::arange(t, tokens.options());
  torch::Tensor x = embed_(tokens) + pos_(positions).unsqueeze(0);
  x = DropoutWith(x, options_.dropout, context.dropout_rng);
  torch::Tensor aux = torch::zeros({}, x.options().dtype(torch::kFloat));
  for (DecoderBlock& block : blocks_) x = block(x, context, &aux);
  torch::Tensor logits = head_(ln_f_(x));
  return {logits, aux * (options_.aux_loss_coef / double(blocks_.size()))};
}

}  // namespace dsdiag::trainer
