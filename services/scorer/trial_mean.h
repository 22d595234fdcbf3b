// A mean across trials or replicates with its Student-t interval
// (scoring::SummarizeMean) as results.proto's TrialMean: one conversion for
// every scorer that reports one.
#ifndef MEMAUDIT_SERVICES_SCORER_TRIAL_MEAN_H_
#define MEMAUDIT_SERVICES_SCORER_TRIAL_MEAN_H_

#include "memaudit/v1/results.pb.h"
#include "scoring/intervals.h"

namespace memaudit::scorer {

inline v1::TrialMean TrialMeanOf(const scoring::MeanSummary& m) {
  v1::TrialMean out;
  out.set_mean(m.mean);
  out.set_low(m.interval.lo);
  out.set_high(m.interval.hi);
  out.set_stddev(m.stddev);
  out.set_rerun_low(m.rerun.lo);
  out.set_rerun_high(m.rerun.hi);
  return out;
}

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_TRIAL_MEAN_H_
