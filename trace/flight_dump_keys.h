// The keys of dsdiag's flight dump (flight_dump.h, docs/trace-format.md "Flight-recorder
// dump"), each spelled once, as the records' FieldKeys are (trace/records/): the writer
// (FlightDumpJson), the reader (ParseFlightDump) and the tests name a member through these.
#pragma once

#include <string_view>

#include "trace/field_key.h"

namespace dsdiag::trace {

// The dump's object.
struct FlightDumpKeys {
  static constexpr FieldKey schema{"schema"};  // kFlightDumpSchema
  static constexpr FieldKey run_id{"run_id"};
  static constexpr FieldKey rank{"rank"};
  static constexpr FieldKey world_size{"world_size"};
  static constexpr FieldKey reason{"reason"};  // flight_dump_reason below, or a signal's name
  static constexpr FieldKey ts{"ts"};
  static constexpr FieldKey clock{"clock"};      // trace/clock_reference.h's object
  static constexpr FieldKey where{"where"};      // FlightWhereKeys
  static constexpr FieldKey entries{"entries"};  // FlightEntryKeys, collectives
  static constexpr FieldKey p2p{"p2p"};          // FlightEntryKeys, point-to-point
  static constexpr FieldKey sites{"sites"};      // FlightSiteKeys
  static constexpr FieldKey stacks{"stacks"};    // FlightStackKeys
};

// `where`: the main thread's step and phase when it dumped.
struct FlightWhereKeys {
  static constexpr FieldKey step{"step"};
  static constexpr FieldKey phase{"phase"};
};

// One of `entries` or `p2p`.
struct FlightEntryKeys {
  static constexpr FieldKey pg{"pg"};
  static constexpr FieldKey seq{"seq"};
  static constexpr FieldKey op{"op"};
  static constexpr FieldKey peer{"peer"};              // p2p: the other rank, global
  static constexpr FieldKey group_peer{"group_peer"};  // p2p: its group rank, where it differs
  static constexpr FieldKey match_tag{"match_tag"};    // p2p: the job's tag, when not 0
  static constexpr FieldKey dtype{"dtype"};
  static constexpr FieldKey n{"n"};  // the element count
  static constexpr FieldKey bytes{"bytes"};
  static constexpr FieldKey tag{"tag"};
  static constexpr FieldKey site{"site"};  // an id of `sites`
  static constexpr FieldKey step{"step"};
  static constexpr FieldKey phase{"phase"};
  static constexpr FieldKey state{"state"};  // CollectiveStateName
  static constexpr FieldKey issued{"issued"};
  static constexpr FieldKey started{"started"};
  static constexpr FieldKey completed{"completed"};
  static constexpr FieldKey send{"send"};  // per-peer sizes (trace/peer_counts.h)
  static constexpr FieldKey recv{"recv"};
  static constexpr FieldKey peers{"peers"};
};

// One of `sites`.
struct FlightSiteKeys {
  static constexpr FieldKey id{"id"};
  static constexpr FieldKey file{"file"};
  static constexpr FieldKey line{"line"};
  static constexpr FieldKey fn{"fn"};
};

// One of `stacks`.
struct FlightStackKeys {
  static constexpr FieldKey thread{"thread"};
  static constexpr FieldKey frames{"frames"};
};

// The values of `reason` other than a signal's name ("SIGUSR1", "SIGTERM").
namespace flight_dump_reason {
inline constexpr std::string_view kTimeout = "timeout";      // the watchdog fired
inline constexpr std::string_view kError = "error";          // the rank failed
inline constexpr std::string_view kTerminate = "terminate";  // std::terminate was called
}  // namespace flight_dump_reason

}  // namespace dsdiag::trace
