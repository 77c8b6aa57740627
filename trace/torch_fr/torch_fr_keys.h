// The keys of PyTorch's Flight Recorder dump (torch_fr_dump.h, docs/torch-flight-recorder.md),
// each spelled once, as the records' FieldKeys are (trace/records/): torch writes them (its
// FlightRecorder's dump_entries, torch/csrc/distributed/c10d/FlightRecorderDetail.hpp); the
// reader, synth's dumps and the tests' emulator of torch's versions name them through these.
#pragma once

#include <string_view>

#include "trace/field_key.h"

namespace dsdiag::trace {

// The dump's dict.
struct TorchFrDumpKeys {
  static constexpr FieldKey version{"version"};  // "2.10", the format's version
  static constexpr FieldKey comm_lib_version{"comm_lib_version"};
  static constexpr FieldKey nccl_version{"nccl_version"};  // its name before format 2.10
  static constexpr FieldKey pg_config{"pg_config"};        // TorchFrGroupKeys by group name
  static constexpr FieldKey pg_status{"pg_status"};        // TorchFrStatusKeys by group name
  static constexpr FieldKey entries{"entries"};            // TorchFrEntryKeys
  static constexpr FieldKey schema{"schema"};  // dsdiag's own dump (flight_dump.h), not torch's
};

// One group of `pg_config`.
struct TorchFrGroupKeys {
  static constexpr FieldKey name{"name"};
  static constexpr FieldKey desc{"desc"};    // "default_pg" for the world, else "undefined"
  static constexpr FieldKey ranks{"ranks"};  // "[0, 1, 2]": a string, as torch writes it
};

// One group of `pg_status`.
struct TorchFrStatusKeys {
  static constexpr FieldKey last_enqueued{"last_enqueued_collective"};
  static constexpr FieldKey last_started{"last_started_collective"};
  static constexpr FieldKey last_completed{"last_completed_collective"};
};

// One of `entries`.
struct TorchFrEntryKeys {
  static constexpr FieldKey record_id{"record_id"};
  static constexpr FieldKey pg_id{"pg_id"};
  static constexpr FieldKey process_group{"process_group"};  // (name, desc)
  static constexpr FieldKey collective_seq_id{"collective_seq_id"};
  static constexpr FieldKey seq_id{"seq_id"};  // its name in torch 2.2 and format 1.x
  static constexpr FieldKey p2p_seq_id{"p2p_seq_id"};
  static constexpr FieldKey op_id{"op_id"};
  static constexpr FieldKey profiling_name{"profiling_name"};  // "nccl:all_reduce"
  static constexpr FieldKey time_created_ns{"time_created_ns"};
  static constexpr FieldKey time_created_us{"time_created_us"};  // format 1.x
  static constexpr FieldKey duration_ms{"duration_ms"};
  static constexpr FieldKey input_sizes{"input_sizes"};
  static constexpr FieldKey input_dtypes{"input_dtypes"};
  static constexpr FieldKey output_sizes{"output_sizes"};
  static constexpr FieldKey output_dtypes{"output_dtypes"};
  static constexpr FieldKey state{"state"};  // torch_fr_state below
  static constexpr FieldKey time_discovered_started_ns{"time_discovered_started_ns"};
  static constexpr FieldKey time_discovered_completed_ns{"time_discovered_completed_ns"};
  static constexpr FieldKey retired{"retired"};
  static constexpr FieldKey timeout_ms{"timeout_ms"};
  static constexpr FieldKey is_p2p{"is_p2p"};
  static constexpr FieldKey thread_id{"thread_id"};
  static constexpr FieldKey thread_name{"thread_name"};
  static constexpr FieldKey frames{"frames"};  // TorchFrFrameKeys, innermost first
};

// One of an entry's `frames`.
struct TorchFrFrameKeys {
  static constexpr FieldKey name{"name"};
  static constexpr FieldKey filename{"filename"};
  static constexpr FieldKey line{"line"};
};

// The values of a group's `desc` that torch gives (a job's new_group may give its own).
namespace torch_fr_desc {
inline constexpr std::string_view kDefaultPg = "default_pg";  // the world
inline constexpr std::string_view kUndefined = "undefined";   // new_group without group_desc
}  // namespace torch_fr_desc

// The values of an entry's `state`.
namespace torch_fr_state {
inline constexpr std::string_view kScheduled = "scheduled";
inline constexpr std::string_view kStarted = "started";
inline constexpr std::string_view kCompleted = "completed";
}  // namespace torch_fr_state

}  // namespace dsdiag::trace
