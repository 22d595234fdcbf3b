#include "cli/csv_export.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/exposure_render.h"
#include "cli/forgetting_render.h"
#include "cli/relational_render.h"
#include "cli/render.h"
#include "cli/unlearning_render.h"

namespace memaudit::cli {
namespace {}  // namespace

absl::Status WriteResultsCsv(const v1::AuditResults& r, const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create directory ", dir));
  }
  if (r.has_exposure()) return WriteExposureCsv(r, dir);
  if (r.has_forgetting()) return WriteForgettingCsv(r, dir);
  if (r.has_unlearning()) return WriteUnlearningCsv(r, dir);
  if (r.has_relational()) return WriteRelationalCsv(r, dir);
  std::string attacks = "audit_id,attack,auc,balanced_accuracy\n";
  std::string points =
      "audit_id,attack,fpr_target,tpr,tpr_low,tpr_high,fpr,fpr_low,fpr_high,threshold\n";
  std::string roc = "audit_id,attack,fpr,tpr\n";
  for (const v1::AttackResult& a : r.attacks()) {
    absl::StrAppend(&attacks, absl::StrFormat("%s,%s,%.17g,%.17g\n", r.audit_id(), a.attack(),
                                              a.auc(), a.balanced_accuracy()));
    for (const v1::OperatingPoint& p : a.operating_points()) {
      absl::StrAppend(
          &points,
          absl::StrFormat("%s,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", r.audit_id(),
                          a.attack(), p.fpr_target(), p.tpr(), p.tpr_low(), p.tpr_high(), p.fpr(),
                          p.fpr_low(), p.fpr_high(), p.threshold()));
    }
    for (const v1::RocPoint& p : a.roc()) {
      absl::StrAppend(
          &roc, absl::StrFormat("%s,%s,%.17g,%.17g\n", r.audit_id(), a.attack(), p.fpr(), p.tpr()));
    }
  }
  if (absl::Status s = WriteFile(dir + "/attacks.csv", attacks); !s.ok()) return s;
  if (absl::Status s = WriteFile(dir + "/operating_points.csv", points); !s.ok()) return s;
  return WriteFile(dir + "/roc.csv", roc);
}

}  // namespace memaudit::cli
