// `dsdiag compare` over PyTorch Flight Recorder dumps: a job that ran without dsdiag but left
// `<prefix><rank>` dumps (TORCH_FR_BUFFER_SIZE), or one that left them beside dsdiag's own
// traces. The dumps are read (fr_run.h), their groups matched across ranks (fr_groups.h),
// and the rules run over them: collective-mismatch (fr_mismatch.h), hang and rank-died
// (fr_hang.h), and both over point-to-point ops paired across ranks (fr_p2p.h); a dump
// that could not be used is a trace-corrupt warning naming the file and what was wrong. Findings
// have the kinds and JSON of dsdiag's own analyzers, with `evidence.source`
// "torch-flight-recorder".
#pragma once

#include <vector>

#include "analyzers/framework/finding.h"
#include "analyzers/torch_fr/fr_run.h"

namespace dsdiag::analyzers::torch_fr {

std::vector<Finding> AnalyzeFrRun(const FrRun& run);

}  // namespace dsdiag::analyzers::torch_fr
