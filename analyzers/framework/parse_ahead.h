// Parse-ahead: the step driver's reading side (reading, parsing and checking every rank's
// records, window by window) on a thread of its own, the analyzers on the driver thread.
// simdjson's parse and the reader's checks are about half of compare's work: on two cores
// the driver thread is left the other half, plus reading the copies.
//
// The reading thread copies what it reads into chunks (records as RecordBatch copies them,
// with the rank ends, steps done and progress between them, in order) and queues them; the
// driver thread replays each chunk to its sink, so the analyzers see exactly the sequence
// of the serial drive and the findings are the same. At most kChunksInFlight chunks are in
// flight, so memory stays flat whatever the run's size.
// An error of the reading side (an exception: a trace that cannot be reopened) reaches the
// driver thread where it happened in the sequence, and is rethrown there.
#pragma once

#include <functional>

#include "analyzers/framework/drive_sink.h"

namespace dsdiag::analyzers {

// How far the reading thread may run ahead: kChunksInFlight chunks of about kChunkBytes of
// copied records each, 64 MiB whatever the run's size. The lead must cover the bursts of
// the driver thread's work: at each window's end its analyzers close K steps of every rank
// while the reading thread keeps going. Measured at 16,384 ranks x 100 steps (2 cores, in
// the same minutes): 16 x 4 MiB 7.8-8.1 s, 16 x 1 MiB 8.5-10.0 s, 4 x 4 MiB 8.9-10.6 s, the
// serial drive 8.9-9.9 s.
inline constexpr size_t kChunkBytes = size_t{4} << 20;
inline constexpr size_t kChunksInFlight = 16;

// Runs `read` on a new thread, sending to a sink that queues; replays the queue to `to` on
// this thread. Returns once `read` has returned and its last chunk was replayed; rethrows
// what `read` threw, and what `to` throws (the reading thread then stops at its next chunk).
// `chunk_bytes`: where a chunk is handed over (tests make it small).
void DriveParseAhead(const std::function<void(DriveSink&)>& read, DriveSink& to,
                     size_t chunk_bytes = kChunkBytes);

}  // namespace dsdiag::analyzers
