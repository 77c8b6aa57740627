// MoeDecoder: the reference trainer's model, a small DeepSeek-style decoder — token and
// position embeddings, `n_layers` blocks of causal self-attention plus a mixture-of-experts
// feed-forward (a router sends each token to its top-k of E routed experts; one shared
// expert sees every token), a final norm and an untied head.
//
// Routing is data dependent: an expert that receives no token in a batch takes no part in
// the graph and genuinely gets no gradient on that rank. The gradient sync (grad_sync.h)
// handles that the way DDP with find_unused_parameters=True does.
//
// Parameter names are stable and meaningful because the traces name parameters by them:
//   embed.weight, pos.weight, blocks.1.attn.qkv.weight, blocks.1.moe.router.weight,
//   blocks.1.moe.experts.2.w_in.weight, blocks.1.moe.shared.w_out.bias, ln_f.weight, ...
#pragma once

#include <torch/torch.h>

#include <vector>

namespace dsdiag::trainer {

struct TrainConfig;

struct ModelOptions {
  int vocab = 64;
  int seq_len = 16;
  int d_model = 32;
  int n_layers = 2;
  int n_heads = 2;
  int n_experts = 4;
  int top_k = 2;
  int d_ff = 64;
  double dropout = 0.1;
  // Weight of the load-balancing loss that keeps the router from starving experts.
  double aux_loss_coef = 0.01;
};

// Checks the sizes (throws std::invalid_argument naming the bad setting).
ModelOptions ModelOptionsFrom(const TrainConfig& config);

// What one forward pass needs besides the tokens.
struct ForwardContext {
  // Dropout draws from this generator; null turns dropout off (evaluation).
  torch::Generator* dropout_rng = nullptr;
  // Fault injection `unused-param`: the shared expert is skipped on this rank.
  bool skip_shared_expert = false;
};

struct ModelOutput {
  torch::Tensor logits;    // [batch, seq, vocab]
  torch::Tensor aux_loss;  // scalar load-balancing loss (already weighted)
};

// A two-layer feed-forward expert: w_out(gelu(w_in(x))).
class ExpertImpl : public torch::nn::Module {
 public:
  ExpertImpl(int d_model, int d_ff);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear w_in_{nullptr};
  torch::nn::Linear w_out_{nullptr};
};
TORCH_MODULE(Expert);

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const ModelOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const ForwardContext& context);

 private:
  int n_heads_;
  double dropout_;
  torch::nn::Linear qkv_{nullptr};
  torch::nn::Linear proj_{nullptr};
};
TORCH_MODULE(CausalSelfAttention);

class MoeFeedForwardImpl : public torch::nn::Module {
 public:
  explicit MoeFeedForwardImpl(const ModelOptions& options);
  // Returns the mixed expert output; adds this layer's balancing loss to *aux_loss.
  torch::Tensor forward(const torch::Tensor& x, const ForwardContext& context,
                        torch::Tensor* aux_loss);

 private:
  int top_k_;
  double dropout_;
  torch::nn::Linear router_{nullptr};
  torch::nn::ModuleList experts_list_{nullptr};
  std::vector<Expert> experts_;
  Expert shared_{nullptr};
};
TORCH_MODULE(MoeFeedForward);

class DecoderBlockImpl : public torch::nn::Module {
 public:
  explicit DecoderBlockImpl(const ModelOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const ForwardContext& context,
                        torch::Tensor* aux_loss);

 private:
  torch::nn::LayerNorm ln1_{nullptr};
  CausalSelfAttention attn_{nullptr};
  torch::nn::LayerNorm ln2_{nullptr};
  MoeFeedForward moe_{nullptr};
};
TORCH_MODULE(DecoderBlock);

class MoeDecoderImpl : public torch::nn::Module {
 public:
  explicit MoeDecoderImpl(const ModelOptions& options);
  // tokens: [batch, seq] int64 with seq <= seq_len.
  ModelOutput forward(const torch::Tensor& tokens, const ForwardContext& context);
  const ModelOptions& options() const { return options_; }

 private:
  ModelOptions options_;
  torch::nn::Embedding embed_{nullptr};
  torch::nn::Embedding pos_{nullptr};
  torch::nn::ModuleList blocks_list_{nullptr};
  std::vector<DecoderBlock> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(MoeDecoder);

// Dropout drawing its mask from `rng` (torch::nn::Dropout would use the global generator,
// which neither resumes exactly nor separates per-rank streams). Identity when rng is null.
torch::Tensor DropoutWith(const torch::Tensor& x, double p, torch::Generator* rng);

}  // namespace dsdiag::trainer
