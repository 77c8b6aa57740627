// Content digests of tensors for the trainer's own records (checkpoint and generator
// fingerprints, sampler orders): the probes' xxHash3 fingerprints over the raw bytes, so
// equal digests across ranks mean bit-identical tensors.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsdiag::trainer {

uint64_t HashBytes(const void* data, size_t size);
// Digest of the tensors' bytes in order (undefined tensors add nothing).
uint64_t HashTensors(const std::vector<torch::Tensor>& tensors);

}  // namespace dsdiag::trainer
