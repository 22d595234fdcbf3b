#include "cli/render.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/gates.h"
#include "cli/kind_handler.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/event_types.h"
#include "common/training/numerics.h"
#include "nlohmann/json.hpp"

namespace memaudit::cli {

std::string HtmlEscape(absl::string_view text) {
  return absl::StrReplaceAll(text,
                             {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}
namespace {

void EmitYaml(const nlohmann::json& j, YAML::Emitter* out) {
  if (j.is_object()) {
    *out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      *out << YAML::Key << it.key() << YAML::Value;
      EmitYaml(it.value(), out);
    }
    *out << YAML::EndMap;
  } else if (j.is_array()) {
    *out << YAML::BeginSeq;
    for (const auto& item : j) EmitYaml(item, out);
    *out << YAML::EndSeq;
  } else if (j.is_string()) {
    *out << j.get<std::string>();
  } else if (j.is_null()) {
    *out << YAML::Null;
  } else {
    *out << j.dump();
  }
}

std::string Duration(double seconds) {
  const int s = static_cast<int>(std::lround(seconds));
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

// Where the runs the audit did not train came from: a line per run, the
// first kMaxReusedLines of them (results.json lists every one).
std::string ReusedLines(const v1::AuditResults& r) {
  constexpr int kMaxReusedLines = 10;
  if (r.reused().empty()) return "";
  std::string out =
      absl::StrCat("reused: ", r.reused_size(), " run(s) trained by earlier audits:\n");
  for (int i = 0; i < r.reused_size() && i < kMaxReusedLines; ++i) {
    const v1::ReusedRun& u = r.reused(i);
    absl::StrAppend(&out, "  run ", u.run(), " <- audit ", u.from_audit_id(), " run ", u.from_run(),
                    " (", u.from_task(), ", lease ", u.from_lease(), ", ",
                    u.from_worker().empty() ? "writer unknown" : u.from_worker(), ")\n");
  }
  if (r.reused_size() > kMaxReusedLines) {
    absl::StrAppend(&out, "  ... and ", r.reused_size() - kMaxReusedLines,
                    " more (--output json lists each)\n");
  }
  return out;
}

}  // namespace

absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "json") return OutputFormat::kJson;
  if (name == "yaml") return OutputFormat::kYaml;
  return absl::InvalidArgumentError(
      absl::StrCat("--output: \"", name, "\" is not one of table, json, yaml"));
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string JsonToYaml(const std::string& json) {
  YAML::Emitter out;
  EmitYaml(nlohmann::json::parse(json), &out);
  return std::string(out.c_str()) + "\n";
}

std::string StateName(v1::AuditState state) {
  std::string name = v1::AuditState_Name(state);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return name;
}

std::string ResultsTable(const v1::AuditResults& r) {
  if (!r.error().empty()) {
    return absl::StrCat("audit ", r.audit_id(), ": cannot be scored: ", r.error(), "\n");
  }
  if (!r.complete()) {
    return absl::StrCat("audit ", r.audit_id(), ": results not complete yet (", r.models(),
                        " models planned)\n");
  }
  const KindHandler* kind = HandlerFor(KindOfApi(r.kind()));
  if (kind == nullptr)
    return absl::StrCat("audit ", r.audit_id(), ": unknown kind ", static_cast<int>(r.kind()),
                        "\n");
  std::string table = kind->Table(r);
  absl::StrAppend(&table, GateLines(r));
  for (const v1::ResultWarning& w : r.warnings()) {
    absl::StrAppend(&table, "warning (", w.code(), "): ", w.message(), "\n");
  }
  absl::StrAppend(&table, ReusedLines(r));
  if (r.has_spec()) {
    absl::StrAppend(&table, "numerics: ", NumericsLine(r.spec().resources()), "\n");
    for (const std::string& environment : r.spec().resources().numeric_environments()) {
      absl::StrAppend(&table, "trained on: ", environment, "\n");
    }
  }
  return table;
}

std::string NumericsLine(const v1::Resources& resources) {
  if (resources.gpus_per_task() > 0) return "CUDA (a class of its own, docs/engine.md)";
  if (resources.numerics() == kNativeNumerics) {
    return absl::StrCat(
        "native, class ",
        resources.numeric_class().empty() ? "not chosen yet" : resources.numeric_class(),
        " (the same bits on CPUs of that class only)");
  }
  return "portable (AVX2 kernels: the same bits on every x86-64 CPU with AVX2 and FMA)";
}

std::string RenderResults(const v1::AuditResults& results, OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return ToJson(results);
    case OutputFormat::kYaml:
      return JsonToYaml(ToJson(results));
    default:
      return ResultsTable(results);
  }
}

std::string RenderAudits(const std::vector<v1::Audit>& audits, OutputFormat format) {
  if (format != OutputFormat::kTable) {
    v1::ListResponse list;
    for (const v1::Audit& a : audits) *list.add_audits() = a;
    const std::string json = ToJson(list);
    return format == OutputFormat::kJson ? json : JsonToYaml(json);
  }
  std::string out = absl::StrFormat("%-20s %-12s %-10s %-16s %-12s %s\n", "AUDIT", "KIND", "STATE",
                                    "TASKS done/all", "STEPS", "NAME");
  for (const v1::Audit& a : audits) {
    absl::StrAppend(&out,
                    absl::StrFormat("%-20s %-12s %-10s %-16s %-12s %s\n", a.audit_id(),
                                    AuditKindName(a.kind()), StateName(a.state()),
                                    absl::StrCat(a.tasks().succeeded(), "/", a.tasks().total()),
                                    absl::StrCat(a.steps_done(), "/", a.steps_total()), a.name()));
    if (!a.error().empty()) absl::StrAppend(&out, "  error: ", a.error(), "\n");
  }
  return out;
}

ProgressPrinter::ProgressPrinter(std::FILE* out)
    : out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      rate_time_(start_) {}

void ProgressPrinter::Update(const v1::AuditEvent& event) {
  const v1::Audit& a = event.audit();
  if (!tty_) {
    if (event.type() != v1::PROGRESS && event.type() != v1::TASK_LEASED) {
      std::fprintf(out_, "%s %s %s%s%s\n", a.audit_id().c_str(),
                   EventTypeName(event.type()).c_str(), event.task_id().c_str(),
                   event.message().empty() ? "" : ": ", event.message().c_str());
      std::fflush(out_);
    }
    return;
  }
  // A warning goes on its own line above the bar, which stays.
  if (event.type() == v1::AUDIT_WAITING) {
    std::fprintf(out_, "\r\033[K%s: %s\n", a.audit_id().c_str(), event.message().c_str());
  }
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - rate_time_).count();
  if (dt >= 1.0) {
    const double instant = (a.steps_done() - std::min(a.steps_done(), rate_steps_)) / dt;
    // Smoothed so the rate and ETA do not jump with every heartbeat.
    steps_per_second_ = steps_per_second_ == 0 ? instant : 0.7 * steps_per_second_ + 0.3 * instant;
    rate_steps_ = a.steps_done();
    rate_time_ = now;
  }
  const double fraction =
      a.steps_total() == 0 ? 0 : static_cast<double>(a.steps_done()) / a.steps_total();
  const int width = 24;
  const int filled = static_cast<int>(fraction * width);
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string eta = "--:--";
  if (steps_per_second_ > 0 && a.steps_total() >= a.steps_done()) {
    eta = Duration((a.steps_total() - a.steps_done()) / steps_per_second_);
  }
  std::fprintf(out_, "\r[%s] %u/%u tasks  %lu/%lu steps  %.0f steps/s  ETA %s  elapsed %s   ",
               bar.c_str(), a.tasks().succeeded(), a.tasks().total(),
               static_cast<unsigned long>(a.steps_done()),
               static_cast<unsigned long>(a.steps_total()), steps_per_second_, eta.c_str(),
               Duration(std::chrono::duration<double>(now - start_).count()).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressPrinter::Finish() {
  if (drawn_) std::fprintf(out_, "\n");
  std::fflush(out_);
}

std::string InsertedLabel(uint32_t repeats) {
  return repeats == 0 ? "control" : absl::StrCat("x", repeats);
}

}  // namespace memaudit::cli
