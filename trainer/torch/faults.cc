#include "trainer/torch/faults.h"

namespace dsdiag::trainer {

bool Faults::AtStep(inject::Kind kind, int64_t step) const {
  // Several specs of one kind may target different ranks or steps: any match fires.
  for (const inject::InjectSpec& spec : plan_.specs()) {
    if (spec.kind != kind) continue;
    if (spec.rank && *spec.rank != rank_) continue;
    if (spec.step.value_or(0) == step) return true;
  }
  return false;
}

int64_t Faults::Ms(inject::Kind kind) const {
  const inject::InjectSpec* spec = plan_.FindFor(kind, rank_);
  if (spec == nullptr) return 0;
  return spec->ms.value_or(0);
}

}  // namespace dsdiag::trainer
