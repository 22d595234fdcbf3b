#include "common/metrics/metrics.h"

#include <prometheus/text_serializer.h>

namespace memaudit::metrics {

prometheus::Family<prometheus::Gauge>& AddGauge(prometheus::Registry& registry,
                                                const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

prometheus::Family<prometheus::Counter>& AddCounter(prometheus::Registry& registry,
                                                    const std::string& name,
                                                    const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

prometheus::Family<prometheus::Histogram>& AddHistogram(prometheus::Registry& registry,
                                                        const std::string& name,
                                                        const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

std::string Exposition(const prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace memaudit::metrics
