// The factory of every analyzer; each is defined in its <kind>_analyzer.cc next to the
// concrete class (in an anonymous namespace there). registry.cc lists them once.
#pragma once

#include <memory>

#include "analyzers/framework/analyzer.h"

namespace dsdiag::analyzers {

std::unique_ptr<Analyzer> CreateTraceCorruptAnalyzer();        // trace_corrupt_analyzer.cc
std::unique_ptr<Analyzer> CreateRankDiedAnalyzer();            // rank_died_analyzer.cc
std::unique_ptr<Analyzer> CreateConfigMismatchAnalyzer();      // config_mismatch_analyzer.cc
std::unique_ptr<Analyzer> CreateMissingGradAnalyzer();         // missing_grad_analyzer.cc
std::unique_ptr<Analyzer> CreateGradDesyncAnalyzer();          // grad_desync_analyzer.cc
std::unique_ptr<Analyzer> CreateInitDivergenceAnalyzer();      // init_divergence_analyzer.cc
std::unique_ptr<Analyzer> CreateReplicaDivergenceAnalyzer();   // replica_divergence_analyzer.cc
std::unique_ptr<Analyzer> CreateStragglerAnalyzer();           // straggler_analyzer.cc
std::unique_ptr<Analyzer> CreateCollectiveMismatchAnalyzer();  // collective_mismatch_analyzer.cc
std::unique_ptr<Analyzer>
CreateGroupWiringAnalyzer();                     // group_wiring_analyzer.cc (collective-mismatch)
std::unique_ptr<Analyzer> CreateHangAnalyzer();  // hang_analyzer.cc
std::unique_ptr<Analyzer> CreateScalerOverflowAnalyzer();      // scaler_overflow_analyzer.cc
std::unique_ptr<Analyzer> CreateScalerDesyncAnalyzer();        // scaler_desync_analyzer.cc
std::unique_ptr<Analyzer> CreateClipBeforeUnscaleAnalyzer();   // clip_before_unscale_analyzer.cc
std::unique_ptr<Analyzer> CreateCheckpointRaceAnalyzer();      // checkpoint_race_analyzer.cc
std::unique_ptr<Analyzer> CreateCheckpointMismatchAnalyzer();  // checkpoint_mismatch_analyzer.cc
std::unique_ptr<Analyzer> CreateRngCollisionAnalyzer();        // rng_collision_analyzer.cc
std::unique_ptr<Analyzer> CreateInputDivergenceAnalyzer();     // input_divergence_analyzer.cc
std::unique_ptr<Analyzer> CreateShardOverlapAnalyzer();        // shard_overlap_analyzer.cc
std::unique_ptr<Analyzer> CreateEpochOrderRepeatAnalyzer();    // epoch_order_repeat_analyzer.cc
std::unique_ptr<Analyzer> CreateLoaderStarvationAnalyzer();    // loader_starvation_analyzer.cc

}  // namespace dsdiag::analyzers
