// An analyzer (or a findings pass) is added here and nowhere else: no static-initialiser
// registration, so the list a run uses is the list you read.
#include "analyzers/framework/registry.h"

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/framework/replica_scoped.h"

namespace dsdiag::analyzers {

std::vector<std::unique_ptr<Analyzer>> CreateAllAnalyzers() {
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(CreateTraceCorruptAnalyzer());
  analyzers.push_back(CreateRankDiedAnalyzer());
  analyzers.push_back(CreateConfigMismatchAnalyzer());
  // The kinds that compare replicas' values compare each replica set on its own
  // (replica_scoped.h): shards, stages and experts differ by design.
  analyzers.push_back(ReplicaScoped(CreateMissingGradAnalyzer));
  analyzers.push_back(ReplicaScoped(CreateGradDesyncAnalyzer));
  analyzers.push_back(ReplicaScoped(CreateInitDivergenceAnalyzer));
  analyzers.push_back(ReplicaScoped(CreateReplicaDivergenceAnalyzer));
  analyzers.push_back(CreateStragglerAnalyzer());
  analyzers.push_back(CreateCollectiveMismatchAnalyzer());
  analyzers.push_back(CreateGroupWiringAnalyzer());
  analyzers.push_back(CreateHangAnalyzer());
  analyzers.push_back(CreateScalerOverflowAnalyzer());
  analyzers.push_back(CreateScalerDesyncAnalyzer());
  analyzers.push_back(CreateClipBeforeUnscaleAnalyzer());
  analyzers.push_back(CreateCheckpointRaceAnalyzer());
  analyzers.push_back(CreateCheckpointMismatchAnalyzer());
  analyzers.push_back(CreateRngCollisionAnalyzer());
  analyzers.push_back(CreateShardOverlapAnalyzer());
  analyzers.push_back(CreateInputDivergenceAnalyzer());
  analyzers.push_back(CreateEpochOrderRepeatAnalyzer());
  analyzers.push_back(CreateLoaderStarvationAnalyzer());
  return analyzers;
}

std::vector<std::unique_ptr<FindingsPass>> CreateAllFindingsPasses() {
  std::vector<std::unique_ptr<FindingsPass>> passes;
  // A mismatch first: the hang it causes becomes its follow-on, so the hang's own victims
  // are follow-ons of a follow-on, and one error stays on screen.
  passes.push_back(CreateMismatchFollowOnPass());
  passes.push_back(CreateHangFollowOnPass());
  passes.push_back(CreateDivergenceFollowOnPass());
  passes.push_back(CreateUnsplitDataFollowOnPass());
  return passes;
}

}  // namespace dsdiag::analyzers
