// ParamTable: a rank's `params` record — parameter names, shapes and gradient-sync buckets —
// so that findings name `blocks.1.moe.experts.2.w_in.weight` rather than index 14.
//
//   {"type":"params",...,"names":["embed.weight",...],"shapes":[[64,32],...],
//    "dtypes":["f32",...],"buckets":[[12,13],[0,1,2]]}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

struct ParamTable {
  std::vector<std::string> names;
  std::vector<std::vector<int>> buckets;
  std::vector<std::string> buffers;  // optional: the buffers' names, when written

  // Parses a `params` record; nullopt when its arrays are malformed.
  static std::optional<ParamTable> FromRecord(const trace::Record& record);

  // "blocks.0.attn.qkv.weight", or "param #14" past the table.
  std::string ParamName(int index) const;
  // "bucket 2 (blocks.0.attn.qkv.weight, blocks.0.attn.out.weight +3 more)".
  std::string BucketName(int index) const;
  // "bn.running_mean", or "buffer #3" past the table.
  std::string BufferName(int index) const;
  // ParamName or BucketName by fingerprint granularity ("param" or "bucket").
  std::string Describe(bool per_param, int index) const;
};

// Reads an array field of ints; false when absent or malformed. (Arrays of 16-hex-digit
// hashes: trace::Record::HexArray.)
bool ReadIntArray(const trace::Record& record, const char* key, std::vector<int>* out);

}  // namespace dsdiag::analyzers
