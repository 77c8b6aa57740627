// ReplicaScoped: an analyzer that compares the values ranks must share (parameters,
// gradients, which gradients exist) run once per replica set — the ranks that must hold the
// same parameters — so that tensor-parallel shards, pipeline stages and experts, which
// differ by design, are never compared with each other.
//
// A rank's replica set is what its `params` record declares (`replicas`: DDP's process group
// when it is a sub-group, docs/findings.md "Which ranks must agree"); ranks that declare
// none are one set, the run's. Each set gets its own instance of the wrapped analyzer, made
// by `make`, which sees only that set's ranks' records (the `params` record included) and
// every OnStepDone; each finding of a declared set carries the set as evidence `replicas`.
// A run where no rank declares a set is one instance that sees everything: the analyzer as
// it is, its findings byte for byte.
#pragma once

#include <functional>
#include <memory>

#include "analyzers/framework/analyzer.h"

namespace dsdiag::analyzers {

using AnalyzerFactory = std::function<std::unique_ptr<Analyzer>()>;

std::unique_ptr<Analyzer> ReplicaScoped(AnalyzerFactory make);

}  // namespace dsdiag::analyzers
