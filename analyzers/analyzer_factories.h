// The factory of every analyzer; each is defined in its <kind>_analyzer.cc next to the
// concrete class (in an anonymous namespace there). registry.cc lists them once.
#pragma once

#include <memory>

#include "analyzers/analyzer.h"

namespace dsdiag::analyzers {

std::unique_ptr<Analyzer> CreateTraceCorruptAnalyzer();    // trace_corrupt_analyzer.cc
std::unique_ptr<Analyzer> CreateRankDiedAnalyzer();        // rank_died_analyzer.cc
std::unique_ptr<Analyzer> CreateConfigMismatchAnalyzer();  // config_mismatch_analyzer.cc
std::unique_ptr<Analyzer> CreateMissingGradAnalyzer();     // missing_grad_analyzer.cc
std::unique_ptr<Analyzer> CreateGradDesyncAnalyzer();      // grad_desync_analyzer.cc
// Reports init-divergence and replica-divergence.
std::unique_ptr<Analyzer> CreateReplicaDivergenceAnalyzer();  // replica_divergence_analyzer.cc
std::unique_ptr<Analyzer> CreateStragglerAnalyzer();            // straggler_analyzer.cc
std::unique_ptr<Analyzer> CreateCollectiveMismatchAnalyzer();  // collective_mismatch_analyzer.cc
std::unique_ptr<Analyzer> CreateHangAnalyzer();                 // hang_analyzer.cc

}  // namespace dsdiag::analyzers
