#include "cli/diff.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/audit_kinds.h"
#include "spec/kind_handler.h"

namespace memaudit::cli {
namespace {

std::vector<spec::GateMetric> MetricsOf(const v1::AuditResults& r) {
  const spec::KindHandler* kind = spec::HandlerFor(r.spec().kind_case());
  return kind == nullptr ? std::vector<spec::GateMetric>{} : kind->GateMetrics(r.spec());
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

std::string Reading(const std::optional<spec::MetricReading>& r) {
  if (!r.has_value()) return "-";
  return absl::StrFormat("%.4g [%.4g, %.4g]", r->value, r->low, r->high);
}

}  // namespace

spec::MetricReading DifferenceOf(const spec::MetricReading& a, const spec::MetricReading& b) {
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
  const std::vector<spec::GateMetric> old_metrics = MetricsOf(old_results);
  const std::vector<spec::GateMetric> new_metrics = MetricsOf(new_results);
  const auto find = [](const std::vector<spec::GateMetric>& in, const std::string& name) {
    for (const spec::GateMetric& m : in) {
      if (m.name == name) return &m;
    }
    return static_cast<const spec::GateMetric*>(nullptr);
  };
  const auto add = [&](const spec::GateMetric* o, const spec::GateMetric* n) {
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
  for (const spec::GateMetric& m : old_metrics) add(&m, find(new_metrics, m.name));
  for (const spec::GateMetric& m : new_metrics) {
    if (find(old_metrics, m.name) == nullptr) add(nullptr, &m);
  }
  return out;
}

std::string DiffTable(const std::vector<MetricChange>& changes, const std::string& old_name,
                      const std::string& new_name) {
  std::string out =
      absl::StrFormat("old: %s\nnew: %s\n%-40s %-28s %-28s %s\n", old_name, new_name, "metric",
                      "old [95% interval]", "new [95% interval]", "new - old [95% interval]");
  size_t significant = 0, worse = 0;
  for (const MetricChange& c : changes) {
    std::string change = "-";
    if (c.difference.has_value()) {
      change = absl::StrFormat("%+.4g [%+.4g, %+.4g]%s", c.difference->value, c.difference->low,
                               c.difference->high,
                               c.worse ? "  WORSE" : (c.significant ? "  better" : ""));
    } else if (c.old_reading && c.new_reading) {
      change = absl::StrFormat("%+.4g (no interval)", c.new_reading->value - c.old_reading->value);
    }
    significant += c.significant;
    worse += c.worse;
    absl::StrAppend(&out, absl::StrFormat("%-40s %-28s %-28s %s\n", c.metric,
                                          Reading(c.old_reading), Reading(c.new_reading), change));
  }
  absl::StrAppend(
      &out, absl::StrFormat("%u of %u metrics changed significantly (%u worse); each at 95%%, "
                            "not corrected for the number of metrics\n",
                            significant, changes.size(), worse));
  return out;
}

}  // namespace memaudit::cli
