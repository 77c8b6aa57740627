// DdpHookApi: what dsdiag._core hands to DDP's communication hook in C++
// (python/torch_ext/ddp_comm_hook.cc, a module built against one torch): plain function
// pointers over this process's probes. The hook records through the one writer and flight
// recorder that live in _core, without torch linked into _core or a second copy of the
// probes in the hook's module. Passed as a capsule named kDdpHookApiCapsule; a hook built
// for another version refuses it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsdiag::python {

inline constexpr uint32_t kDdpHookApiVersion = 1;
inline constexpr char kDdpHookApiCapsule[] = "dsdiag._core.DdpHookApi";

struct DdpHookApi {
  uint32_t version;
  void* probes;  // the RankProbes the functions below record into
  // A bucket's allreduce issued: a CollectiveOp "allreduce" tagged "ddp-bucket-<bucket>",
  // as the Python hook records it. Null when the probes are off.
  void* (*begin_allreduce)(void* probes, int pg, const char* dtype, int64_t count, int64_t bytes,
                           int64_t bucket);
  void (*started)(void* op);                 // the backend accepted it
  void (*completed)(void* op, bool failed);  // any thread (the backend's)
  void (*write_and_free)(void* op);          // the `coll` record, on the job's thread
  // The fingerprint the Python probes take of one contiguous range (fingerprint_groups),
  // and of a sample of it (fingerprint_samples, probes::SampleFingerprint).
  uint64_t (*fingerprint)(const void* data, size_t nbytes);
  uint64_t (*sample)(const void* data, size_t nbytes);
};

}  // namespace dsdiag::python
