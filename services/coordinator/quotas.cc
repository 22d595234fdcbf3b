#include "services/coordinator/quotas.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/messages/spec_yaml.h"
#include "common/security/identity.h"

namespace memaudit::coordinator {
namespace {

// A problem of the file at `node`'s line: "line 3: teams.alpha.max_x: ...".
absl::Status Bad(const YAML::Node& node, const std::string& key, const std::string& rule) {
  const YAML::Mark mark = node.Mark();
  std::string where = mark.is_null() ? "" : absl::StrCat("line ", mark.line + 1, ": ");
  return absl::InvalidArgumentError(absl::StrCat(where, key, key.empty() ? "" : ": ", rule));
}

using Limit = std::optional<uint64_t> QuotaLimits::*;
constexpr std::pair<const char*, Limit> kLimits[] = {
    {"max_concurrent_audits", &QuotaLimits::max_concurrent_audits},
    {"max_queued_tasks", &QuotaLimits::max_queued_tasks},
    {"max_models_per_audit", &QuotaLimits::max_models_per_audit},
    {"max_spec_bytes", &QuotaLimits::max_spec_bytes},
};

std::optional<uint64_t>* Field(QuotaLimits* limits, absl::string_view name) {
  for (const auto& [known, member] : kLimits) {
    if (name == known) return &(limits->*member);
  }
  return nullptr;
}

std::string Describe(const YAML::Node& node) {
  if (node.IsScalar()) return QuoteValue(node.Scalar());
  if (node.IsNull()) return "nothing";
  return node.IsMap() ? "a map" : "a list";
}

// The map entries of `node` (a map, or null for an empty block), each key a
// plain string seen once; `path` names the block in messages.
absl::Status ForEachEntry(const YAML::Node& node, const std::string& path,
                          const std::function<absl::Status(const std::string&, const YAML::Node&,
                                                           const YAML::Node&)>& each) {
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) {
    return Bad(node, path.empty() ? "the file" : path,
               absl::StrCat("must be a map (got ", Describe(node), ")"));
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;  // copies: `it->` is a temporary proxy
    const YAML::Node value = it->second;
    if (!key.IsScalar()) return Bad(key, path, "keys must be plain names");
    const std::string& name = key.Scalar();
    const std::string key_path = path.empty() ? name : absl::StrCat(path, ".", name);
    if (!seen.insert(name).second) return Bad(key, QuoteValue(key_path), "duplicate key");
    if (absl::Status s = each(name, key, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A whole number in [min, max] at `value`, or nullopt.
std::optional<uint64_t> WholeNumber(const YAML::Node& value, uint64_t min, uint64_t max) {
  uint64_t parsed = 0;
  const std::string text = value.IsScalar() ? value.Scalar() : "";
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || !absl::SimpleAtoi(text, &parsed) || parsed < min || parsed > max) {
    return std::nullopt;
  }
  return parsed;
}

// A block of limits: `default:`, or a team's when `weight` is not null (a
// team's block also takes the team's weight).
absl::Status ParseLimits(const YAML::Node& node, const std::string& path, QuotaLimits* limits,
                         std::optional<uint32_t>* weight) {
  return ForEachEntry(
      node, path, [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) {
        const std::string key_path = absl::StrCat(path, ".", name);
        if (name == "weight") {
          if (weight == nullptr) {
            return Bad(key, QuoteValue(key_path),
                       "a weight is a team's own: set it under teams.NAME.weight");
          }
          std::optional<uint64_t> parsed = WholeNumber(value, 1, kMaxTeamWeight);
          if (!parsed.has_value()) {
            return Bad(value, key_path,
                       absl::StrCat("must be a whole number in [1, ", kMaxTeamWeight, "] (got ",
                                    Describe(value), "); leave it out for 1"));
          }
          *weight = static_cast<uint32_t>(*parsed);
          return absl::OkStatus();
        }
        std::optional<uint64_t>* field = Field(limits, name);
        if (field == nullptr) {
          return Bad(key, QuoteValue(key_path),
                     absl::StrCat("unknown limit (known: max_concurrent_audits, "
                                  "max_queued_tasks, max_models_per_audit, max_spec_bytes",
                                  weight == nullptr ? "" : ", and the team's weight", ")"));
        }
        std::optional<uint64_t> parsed = WholeNumber(value, 0, kMaxQuotaValue);
        if (!parsed.has_value()) {
          return Bad(value, key_path,
                     absl::StrCat("must be a whole number in [0, ", kMaxQuotaValue, "] (got ",
                                  Describe(value), "); leave it out for no limit"));
        }
        *field = *parsed;
        return absl::OkStatus();
      });
}

std::string Plural(uint64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

}  // namespace

QuotaLimits QuotaConfig::For(const std::string& team) const {
  auto it = teams.find(team);
  if (it == teams.end()) return defaults;
  QuotaLimits out = it->second;
  for (const auto& [name, member] : kLimits) {
    if (!(out.*member).has_value()) out.*member = defaults.*member;
  }
  return out;
}

uint32_t QuotaConfig::WeightOf(const std::string& team) const {
  auto it = weights.find(team);
  return it == weights.end() ? 1 : it->second;
}

absl::Status CheckQuota(const QuotaLimits& limits, const std::string& who, const QuotaUsage& usage,
                        std::string* limit_name) {
  auto refuse = [&](const char* name, const std::string& numbers, uint64_t limit) {
    if (limit_name != nullptr) *limit_name = name;
    return absl::ResourceExhaustedError(
        absl::StrCat("quota ", name, " for ", who, ": ", numbers, ", at most ", limit));
  };
  if (limits.max_spec_bytes && usage.spec_bytes > *limits.max_spec_bytes) {
    return refuse("max_spec_bytes", absl::StrCat("the spec is ", usage.spec_bytes, " bytes"),
                  *limits.max_spec_bytes);
  }
  if (limits.max_models_per_audit && usage.planned_models > *limits.max_models_per_audit) {
    return refuse("max_models_per_audit",
                  absl::StrCat("the audit plans ", Plural(usage.planned_models, "model", "models")),
                  *limits.max_models_per_audit);
  }
  if (limits.max_concurrent_audits && usage.active_audits >= *limits.max_concurrent_audits) {
    return refuse(
        "max_concurrent_audits",
        absl::StrCat(Plural(usage.active_audits, "audit", "audits"), " running or queued"),
        *limits.max_concurrent_audits);
  }
  if (limits.max_queued_tasks &&
      usage.queued_tasks + usage.planned_tasks > *limits.max_queued_tasks) {
    return refuse("max_queued_tasks",
                  absl::StrCat(Plural(usage.queued_tasks, "task", "tasks"),
                               " queued or running and ", usage.planned_tasks, " more planned"),
                  *limits.max_queued_tasks);
  }
  return absl::OkStatus();
}

absl::StatusOr<QuotaConfig> ParseQuotaFile(absl::string_view yaml) {
  if (yaml.size() > kMaxQuotaFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the file is larger than ", kMaxQuotaFileBytes, " bytes (the limit)"));
  }
  QuotaConfig config;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid YAML: line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  }
  try {
    absl::Status s = ForEachEntry(
        root, "", [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) {
          if (name == "default") {
            return ParseLimits(value, "default", &config.defaults, /*weight=*/nullptr);
          }
          if (name != "teams") {
            return Bad(key, QuoteValue(name), "unknown key (known: default, teams)");
          }
          return ForEachEntry(
              value, "teams",
              [&](const std::string& team, const YAML::Node& team_key, const YAML::Node& block) {
                const std::string path = absl::StrCat("teams.", team);
                if (!IsValidName(team)) {
                  return Bad(team_key, QuoteValue(path),
                             "a team name is 1 to 64 letters, digits, '.', '_' or '-'");
                }
                if (config.teams.size() >= kMaxQuotaTeams) {
                  return Bad(team_key, "teams", absl::StrCat("at most ", kMaxQuotaTeams, " teams"));
                }
                std::optional<uint32_t> weight;
                absl::Status s = ParseLimits(block, path, &config.teams[team], &weight);
                if (s.ok() && weight.has_value()) config.weights[team] = *weight;
                return s;
              });
        });
    if (!s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("line ", e.mark.line + 1, ": ", e.msg));
  }
  return config;
}

absl::StatusOr<QuotaConfig> LoadQuotaFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the quota file"));
  std::string text(kMaxQuotaFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  absl::StatusOr<QuotaConfig> config = ParseQuotaFile(text);
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  return config;
}

}  // namespace memaudit::coordinator
