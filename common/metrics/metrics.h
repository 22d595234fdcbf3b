// memaudit's Prometheus metrics are prometheus-cpp families on a
// prometheus::Registry. These helpers keep call sites to one line: each
// returns the family called `name`, registering it on first use.
// prometheus-cpp merges a second registration of the same name and type into
// the first, so a caller may look a family up again instead of holding it;
// the same name under another type throws std::invalid_argument.
//
// Histograms take their bucket bounds at Family<Histogram>::Add, so each
// module keeps its bounds next to the family's name.
#ifndef MEMAUDIT_COMMON_METRICS_METRICS_H_
#define MEMAUDIT_COMMON_METRICS_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace memaudit::metrics {

prometheus::Family<prometheus::Gauge>& AddGauge(prometheus::Registry& registry,
                                                const std::string& name, const std::string& help);
prometheus::Family<prometheus::Counter>& AddCounter(prometheus::Registry& registry,
                                                    const std::string& name,
                                                    const std::string& help);
prometheus::Family<prometheus::Histogram>& AddHistogram(prometheus::Registry& registry,
                                                        const std::string& name,
                                                        const std::string& help);

// The text exposition format (0.0.4) of everything in `registry`, as
// /metrics serves it.
std::string Exposition(const prometheus::Registry& registry);

}  // namespace memaudit::metrics

#endif  // MEMAUDIT_COMMON_METRICS_METRICS_H_
