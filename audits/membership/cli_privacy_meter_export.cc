#include "audits/membership/cli_privacy_meter_export.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "audits/membership/tasks.h"
#include "cli/render.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "spec/dataset_facts.h"

namespace memaudit::cli {
namespace {

absl::Status WriteBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

std::string LittleEndianU32(const std::vector<uint32_t>& values) {
  std::string out;
  out.reserve(values.size() * 4);
  for (uint32_t v : values) {
    for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
  }
  return out;
}

}  // namespace

std::string NpyFile(const std::string& descr, const std::vector<uint64_t>& shape,
                    const std::string& data) {
  std::string dims;
  for (uint64_t d : shape) absl::StrAppend(&dims, d, ",");
  if (shape.size() > 1) dims.pop_back();  // "(n,)" for one dimension, "(n, m)" otherwise
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a
  // multiple of 64 and ended by a newline, as the format requires.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

absl::Status WritePrivacyMeterExport(const v1::Audit& audit, const v1::AuditResults& results,
                                     const std::string& dir) {
  if (!audit.spec().has_membership()) {
    return absl::FailedPreconditionError(
        "the ML Privacy Meter export holds membership audits only");
  }
  const v1::AuditSpec& spec = audit.spec();
  const v1::MembershipAudit& m = spec.membership();
  if (m.has_documents()) {
    return absl::FailedPreconditionError(
        "the ML Privacy Meter export holds membership audits of a dataset, not of documents");
  }
  const uint32_t models = m.reference_models();
  const uint32_t examples = membership::PoolSize(m);
  const KeepMatrix keep = BuildKeepMatrix(spec.seed(), models, examples);

  std::error_code error;
  const std::filesystem::path root(dir);
  std::filesystem::create_directories(root / "models", error);
  if (error) return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, "/models"));

  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  std::string architecture = m.model().architecture();
  for (uint32_t h : m.model().hidden()) absl::StrAppend(&architecture, "-", h);
  for (uint32_t i = 0; i < models; ++i) {
    uint64_t train = 0;
    for (uint32_t j = 0; j < examples; ++j) train += keep.in(i, j);
    // Privacy Meter's own fields first; the weights stay with the workers
    // (memaudit keeps signals, not models), so model_path is empty.
    metadata[std::to_string(i)] = {
        {"num_train", train},
        {"optimizer", m.training().optimizer()},
        {"batch_size", m.training().batch_size()},
        {"epochs", m.training().epochs()},
        {"model_name", architecture},
        {"learning_rate", m.training().learning_rate()},
        {"weight_decay", m.training().weight_decay()},
        {"model_path", ""},
        {"train_acc", nullptr},
        {"test_acc", nullptr},
        {"train_loss", nullptr},
        {"test_loss", nullptr},
        {"dataset", m.dataset().name()},
        {"memaudit_audit_id", audit.audit_id()},
        {"memaudit_seed", spec.seed()},
        {"memaudit_momentum", m.training().momentum()},
    };
  }
  MEMAUDIT_RETURN_IF_ERROR(WriteBytes(root / "models" / "models_metadata.json", metadata.dump(4)));
  std::string bits(keep.bits.begin(), keep.bits.end());
  MEMAUDIT_RETURN_IF_ERROR(
      WriteBytes(root / "models" / "memberships.npy", NpyFile("|b1", {models, examples}, bits)));
  const uint32_t dataset_size = DatasetRows(m.dataset());
  if (dataset_size > 0) {
    const std::vector<uint32_t> pool = AuditPool(spec.seed(), dataset_size, examples);
    MEMAUDIT_RETURN_IF_ERROR(WriteBytes(root / "pool_indices.npy",
                                        NpyFile("<u4", {pool.size()}, LittleEndianU32(pool))));
  }
  return WriteBytes(root / "memaudit_results.json", ToJson(results));
}

}  // namespace memaudit::cli
