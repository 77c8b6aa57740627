// CollectiveOp: a collective whose completion is seen away from where it was issued — a
// DDP communication hook's future, an async op waited on later — as CollectiveScope is for
// one that completes within a scope. The same `coll` record, flight-recorder entry and
// step totals, with the sequence number from the same CollectiveProbe.
//
//   CollectiveOp op(&collectives, 0, {"allreduce", "f32", n, 4 * n, "ddp-bucket-0"});  // issuing
//   op.Started();    // the backend accepted it
//   op.Completed();  // any thread: the flight recorder sees it done at once
//   op.Write();      // back on the issuing thread: `coll` record, step totals
//
// On a device whose backend completes the future once the work is queued (NCCL on CUDA),
// the host's end is not the collective's: QueuedOnDevice() in place of Completed() ends its
// host side (the record's time, the NVTX range) and leaves the flight entry started, so a
// dump shows it pending until DeviceCompleted(), called once its device event is seen done
// (the Python package polls it: each step, before a dump, before the watchdog times out).
//
// Write() before Completed() records the op as failed (it never completed: the entry stays
// pending in the flight recorder). With probes off every call is one branch; the sequence
// number still advances. Its NVTX range is a start/end one, named as CollectiveScope's
// ("allreduce seq 17 ddp-bucket-0"): started where it is issued, ended where it completes
// (the backend's thread), for its life does not nest on one thread.
#pragma once

#include <cstdint>

#include "probes/collective_probe.h"
#include "probes/op_end.h"
#include "trace/collective.h"
#include "trace/peer_counts.h"

namespace dsdiag::probes {

class CollectiveOp : public IssuedCollective {
 public:
  // `counts`: what the op sends to and receives from each peer, when that is uneven (an
  // all_to_all with split sizes); empty otherwise.
  // `where`: the call site, unless `what.site` names one (the Python package's).
  CollectiveOp(CollectiveProbe* probe, int pg, trace::Collective what,
               trace::PeerCounts counts = {},
               SourceLocation where = SourceLocation::Current()) noexcept;

  // From any thread; `failed`: the backend reported an error (the entry stays pending).
  void Completed(bool failed = false) noexcept;
  // From any thread: queued on a device stream, done on the host; then, once seen done on
  // the device, DeviceCompleted().
  void QueuedOnDevice() noexcept;
  void DeviceCompleted() noexcept;
  // Once, on the issuing thread (later calls do nothing).
  void Write() noexcept;

  bool completed() const noexcept { return end_.done(); }

 private:
  trace::PeerCounts counts_;
  uint64_t nvtx_range_ = 0;  // 0: no NVTX tool attached
  OpEnd end_;
  bool written_ = false;
};

}  // namespace dsdiag::probes
