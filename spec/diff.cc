#include "spec/diff.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/messages/audit_kinds.h"
#include "spec/kind_handler.h"

namespace memaudit::spec {
namespace {

std::vector<GateMetric> MetricsOf(const v1::AuditResults& r) {
  const KindHandler* kind = HandlerFor(r.spec().kind_case());
  return kind == nullptr ? std::vector<GateMetric>{} : kind->GateMetrics(r.spec());
}

absl::Status Comparable(const v1::AuditResults& r, const char* which) {
  if (!r.has_spec() || r.spec().kind_case() == v1::AuditSpec::KIND_NOT_SET) {
    return absl::InvalidArgumentError(absl::StrCat(which, ": results without their spec"));
  }
  if (!r.complete() || !r.error().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(which, ": audit ", r.audit_id(), " has no complete results"));
  }
  return absl::OkStatus();
}

void SetReading(const std::optional<MetricReading>& from, v1::MetricReading* to) {
  to->set_value(from->value);
  to->set_low(from->low);
  to->set_high(from->high);
}

}  // namespace

MetricReading DifferenceOf(const MetricReading& a, const MetricReading& b) {
  const double d = a.value - b.value;
  return {d, d - std::hypot(a.value - a.low, b.high - b.value),
          d + std::hypot(a.high - a.value, b.value - b.low)};
}

absl::StatusOr<std::vector<MetricChange>> DiffResults(const v1::AuditResults& old_results,
                                                      const v1::AuditResults& new_results) {
  if (absl::Status s = Comparable(old_results, "OLD"); !s.ok()) return s;
  if (absl::Status s = Comparable(new_results, "NEW"); !s.ok()) return s;
  if (old_results.spec().kind_case() != new_results.spec().kind_case()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "OLD is a ", AuditKindName(old_results.spec().kind_case()), " audit and NEW a ",
        AuditKindName(new_results.spec().kind_case()), " audit: only audits of one kind compare"));
  }
  std::vector<MetricChange> out;
  const std::vector<GateMetric> old_metrics = MetricsOf(old_results);
  const std::vector<GateMetric> new_metrics = MetricsOf(new_results);
  const auto find = [](const std::vector<GateMetric>& in, const std::string& name) {
    for (const GateMetric& m : in) {
      if (m.name == name) return &m;
    }
    return static_cast<const GateMetric*>(nullptr);
  };
  const auto add = [&](const GateMetric* o, const GateMetric* n) {
    MetricChange c;
    c.metric = o != nullptr ? o->name : n->name;
    if (o != nullptr) c.old_reading = o->read(old_results);
    if (n != nullptr) c.new_reading = n->read(new_results);
    if (c.old_reading && c.new_reading && o->interval && n->interval) {
      c.difference = DifferenceOf(*c.new_reading, *c.old_reading);
      c.significant = c.difference->low > 0 || c.difference->high < 0;
      c.worse = c.difference->low > 0;
    }
    out.push_back(std::move(c));
  };
  for (const GateMetric& m : old_metrics) add(&m, find(new_metrics, m.name));
  for (const GateMetric& m : new_metrics) {
    if (find(old_metrics, m.name) == nullptr) add(nullptr, &m);
  }
  return out;
}

v1::DiffResponse DiffProto(const std::vector<MetricChange>& changes) {
  v1::DiffResponse out;
  for (const MetricChange& c : changes) {
    v1::MetricChange* m = out.add_changes();
    m->set_metric(c.metric);
    if (c.old_reading) SetReading(c.old_reading, m->mutable_old_reading());
    if (c.new_reading) SetReading(c.new_reading, m->mutable_new_reading());
    if (c.difference) SetReading(c.difference, m->mutable_difference());
    m->set_significant(c.significant);
    m->set_worse(c.worse);
  }
  return out;
}

}  // namespace memaudit::spec
