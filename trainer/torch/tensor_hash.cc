#include "trainer/torch/tensor_hash.h"

#include "probes/fingerprint.h"

namespace dsdiag::trainer {

uint64_t HashBytes(const void* data, size_t size) { return probes::FingerprintBytes(data, size); }

uint64_t HashTensors(const std::vector<torch::Tensor>& tensors) {
  probes::Fingerprinter fp;
  for (const torch::Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) continue;
    torch::Tensor bytes = t.detach().to(torch::kCPU).contiguous();
    fp.Add(bytes.data_ptr(), bytes.nbytes());
  }
  return fp.Digest();
}

}  // namespace dsdiag::trainer
