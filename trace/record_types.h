// The vocabulary of the trace format: schema id and record type names.
//
// docs/trace-format.md is the reference for every field; this file only names things so
// that writers and readers cannot disagree on a spelling. Add a type here and in the doc
// in the same change.
#pragma once

#include <cstddef>
#include <string_view>

namespace dsdiag::trace {

// v2 (docs/trace-format.md, "Version 2"): light mode writes no `phase` records, a step's
// repeated collectives as one `colls` record, and a pre-step gradient fingerprint equal to
// its step's after-sync one as a flag on the after-sync record. v3 ("Version 3"): a step's
// per-phase times as arrays in phase::kStepOrder, a `colls` record's issue times as gaps.
// v4 ("Version 4"): those arrays in whole µs (`phases_us`, `cpu_us`, `runq_us`).
// v5 ("Version 5"): `group` and `mesh` records, and a record's `pg` is the group's identity
// (records/group_record.h: GroupNumber of torch's group name), no longer a rank's own count.
// Readers read 1 to 5.
inline constexpr std::string_view kSchema = "dsdiag.trace/5";
inline constexpr int kSchemaMajor = 5;
inline constexpr int kOldestSchemaMajor = 1;
// v1, which every reader reads: `dsdiag synth` writes it (its records are v1's, one per
// phase and op, the shape compare's speed figures have always been measured on).
inline constexpr std::string_view kSchemaV1 = "dsdiag.trace/1";

// Fields every record carries.
inline constexpr std::string_view kFieldType = "type";
inline constexpr std::string_view kFieldTs = "ts";      // rank-local monotonic ns
inline constexpr std::string_view kFieldStep = "step";  // the rank's current step
inline constexpr std::string_view kFieldTid = "tid";    // omitted for thread 0

namespace rec {
inline constexpr std::string_view kHeader = "header";  // first line of every file
inline constexpr std::string_view kEnd = "end";        // last line of a clean exit
inline constexpr std::string_view kThread = "thread";  // names a writer thread
inline constexpr std::string_view kParams = "params";  // parameter table, once
inline constexpr std::string_view kStepBegin = "step_begin";
inline constexpr std::string_view kStep = "step";        // step end summary
inline constexpr std::string_view kPhase = "phase";      // span within a step
inline constexpr std::string_view kCollective = "coll";  // one collective / barrier
// v2: a step's collectives that repeat the previous step's (trace/collective_template.h).
// The reader expands it into `coll` records: no analyzer ever sees one.
inline constexpr std::string_view kCollectiveRun = "colls";
inline constexpr std::string_view kGradient = "grad";    // after-backward gradient check
inline constexpr std::string_view kFingerprint = "fp";   // parameter / gradient hashes
inline constexpr std::string_view kRng = "rng";          // generator state fingerprint
inline constexpr std::string_view kSampler = "sampler";  // samples drawn in an epoch
inline constexpr std::string_view kLoader = "loader";    // data wait per step
inline constexpr std::string_view kScaler = "scaler";    // loss scaler per step
inline constexpr std::string_view kClip = "clip";        // gradient clipping
inline constexpr std::string_view kCheckpoint = "ckpt";  // save or load
inline constexpr std::string_view kSignal = "signal";    // a signal was received
inline constexpr std::string_view kError = "error";      // an exception / failure
inline constexpr std::string_view kClock = "clock";      // offset to rank 0 measured
inline constexpr std::string_view kMark = "mark";        // an online detection
inline constexpr std::string_view kCustom = "custom";    // user-defined payload
// A send or recv between two ranks, numbered per pair (records/p2p_record.h), never in the
// group's collective sequence. Added within v2: older readers skip a type they do not know.
inline constexpr std::string_view kP2P = "p2p";
// A call site, once per rank, named by `coll` and `p2p` records' `site` id
// (records/site_record.h). Added within v2.
inline constexpr std::string_view kSite = "site";
// v5: a process group the rank belongs to, and a device mesh it sits on
// (records/group_record.h).
inline constexpr std::string_view kGroup = "group";
inline constexpr std::string_view kMesh = "mesh";
}  // namespace rec

// The record types above as small integers, for tables indexed by type (the step driver
// dispatches each record only to the analyzers that asked for its type). A name not listed
// (a newer writer's type) gets kOtherRecordType.
inline constexpr std::string_view kRecordTypes[] = {
    rec::kHeader,     rec::kEnd,     rec::kThread,     rec::kParams,   rec::kStepBegin,
    rec::kStep,       rec::kPhase,   rec::kCollective, rec::kGradient, rec::kFingerprint,
    rec::kRng,        rec::kSampler, rec::kLoader,     rec::kScaler,   rec::kClip,
    rec::kCheckpoint, rec::kSignal,  rec::kError,      rec::kClock,    rec::kMark,
    rec::kCustom,     rec::kP2P,     rec::kSite,       rec::kGroup,    rec::kMesh};
inline constexpr int kRecordTypeCount = sizeof(kRecordTypes) / sizeof(kRecordTypes[0]);
inline constexpr int kOtherRecordType = kRecordTypeCount;

// Called once per record by the reader: the frequent types come first, and a name is
// compared only with those of its length and first letter. constexpr, so that analyzers
// name ids at compile time (rec_id below) and compare ints rather than strings per record.
constexpr int RecordTypeId(std::string_view type) {
  constexpr int kByFrequency[] = {6,  7,  5, 4, 9, 8,  12, 13, 3,  10, 11, 21, 14,
                                  15, 18, 1, 2, 0, 16, 17, 19, 20, 22, 23, 24};
  static_assert(sizeof(kByFrequency) / sizeof(kByFrequency[0]) == kRecordTypeCount);
  for (int id : kByFrequency) {
    const std::string_view name = kRecordTypes[id];
    if (name.size() == type.size() && name[0] == type[0] && name == type) return id;
  }
  return kOtherRecordType;
}

// The ids of the types in rec, for Record::type_id() comparisons.
namespace rec_id {
inline constexpr int kHeader = RecordTypeId(rec::kHeader);
inline constexpr int kEnd = RecordTypeId(rec::kEnd);
inline constexpr int kThread = RecordTypeId(rec::kThread);
inline constexpr int kParams = RecordTypeId(rec::kParams);
inline constexpr int kStepBegin = RecordTypeId(rec::kStepBegin);
inline constexpr int kStep = RecordTypeId(rec::kStep);
inline constexpr int kPhase = RecordTypeId(rec::kPhase);
inline constexpr int kCollective = RecordTypeId(rec::kCollective);
inline constexpr int kGradient = RecordTypeId(rec::kGradient);
inline constexpr int kFingerprint = RecordTypeId(rec::kFingerprint);
inline constexpr int kRng = RecordTypeId(rec::kRng);
inline constexpr int kSampler = RecordTypeId(rec::kSampler);
inline constexpr int kLoader = RecordTypeId(rec::kLoader);
inline constexpr int kScaler = RecordTypeId(rec::kScaler);
inline constexpr int kClip = RecordTypeId(rec::kClip);
inline constexpr int kCheckpoint = RecordTypeId(rec::kCheckpoint);
inline constexpr int kSignal = RecordTypeId(rec::kSignal);
inline constexpr int kError = RecordTypeId(rec::kError);
inline constexpr int kClock = RecordTypeId(rec::kClock);
inline constexpr int kMark = RecordTypeId(rec::kMark);
inline constexpr int kCustom = RecordTypeId(rec::kCustom);
inline constexpr int kP2P = RecordTypeId(rec::kP2P);
inline constexpr int kSite = RecordTypeId(rec::kSite);
inline constexpr int kGroup = RecordTypeId(rec::kGroup);
inline constexpr int kMesh = RecordTypeId(rec::kMesh);
static_assert(kMesh == kRecordTypeCount - 1 && kHeader == 0);
}  // namespace rec_id

}  // namespace dsdiag::trace
