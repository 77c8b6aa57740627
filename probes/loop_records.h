// The trainer's records of the kinds docs/trace-format.md designs but no probe writes yet
// (`sampler`, `loader`, `scaler`, `clip`, `ckpt`, `rng`): written through the session's writer in
// exactly the documented shape, so that when a probe takes one over the traces do not
// change. Every function is one branch when probes are off. Torch-free.
//
// One header and source per record type in probes/records/; this umbrella includes them all,
// so that a training loop includes one header for the lot.
#pragma once

#include "probes/records/checkpoint_record.h"
#include "probes/records/clip_record.h"
#include "probes/records/loader_record.h"
#include "probes/records/rng_record.h"
#include "probes/records/sampler_record.h"
#include "probes/records/scaler_record.h"
