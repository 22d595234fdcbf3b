// A forgetting audit's `construction` as the learners of
// scoring/forgetting_constructions.h take it: one mapping for the worker
// (which runs them) and the scorer (which states their closed forms).
#ifndef MEMAUDIT_AUDITS_FORGETTING_CONSTRUCTIONS_H_
#define MEMAUDIT_AUDITS_FORGETTING_CONSTRUCTIONS_H_

#include "audits/forgetting/signals.h"
#include "memaudit/v1/spec.pb.h"
#include "scoring/forgetting_constructions.h"

namespace memaudit::forgetting {

inline scoring::KMeansConstruction KMeansOf(const v1::ForgettingAudit& f) {
  const v1::ForgettingConstruction& c = f.construction();
  scoring::KMeansConstruction k;
  k.sigma = c.sigma();
  k.middle = c.middle();
  k.outlier = c.outlier();
  k.initial_per_cluster = c.initial_per_cluster();
  k.update_per_cluster = c.update_per_cluster();
  return k;
}

// The step size eta is training.learning_rate.
inline scoring::MeanEstimationConstruction MeanEstimationOf(const v1::ForgettingAudit& f) {
  const v1::ForgettingConstruction& c = f.construction();
  scoring::MeanEstimationConstruction m;
  m.sigma = c.sigma();
  m.injected = c.injected();
  m.eta = f.training().learning_rate();
  m.deterministic = c.sampling() == "deterministic";
  return m;
}

}  // namespace memaudit::forgetting

#endif  // MEMAUDIT_AUDITS_FORGETTING_CONSTRUCTIONS_H_
