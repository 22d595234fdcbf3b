#include "services/coordinator/revoked_workers.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace memaudit::coordinator {

absl::StatusOr<std::unique_ptr<RevokedWorkers>> RevokedWorkers::Load(Store* store) {
  std::unique_ptr<RevokedWorkers> revoked(new RevokedWorkers(store));
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> names, store->LoadRevokedWorkers());
  absl::MutexLock lock(&revoked->mu_);
  revoked->names_.insert(names.begin(), names.end());
  return revoked;
}

absl::Status RevokedWorkers::Check(const Identity& caller) const {
  if (caller.role != Role::kWorker) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (!names_.contains(caller.name)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(caller.ToString(), " was revoked by an administrator"));
}

absl::Status RevokedWorkers::Add(const std::string& name) {
  MEMAUDIT_RETURN_IF_ERROR(store_->AddRevokedWorker(name));
  absl::MutexLock lock(&mu_);
  names_.insert(name);
  return absl::OkStatus();
}

}  // namespace memaudit::coordinator
