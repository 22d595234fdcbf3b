#include "services/worker/classifier_model.h"

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace memaudit::worker {

absl::StatusOr<engine::ModelSpec> ClassifierModelOf(const v1::ModelSpec& model,
                                                    const v1::DatasetSpec& dataset,
                                                    const std::string& field) {
  engine::ModelSpec out;
  MEMAUDIT_ASSIGN_OR_RETURN(out.kind, engine::ParseModelKind(model.architecture(), field));
  switch (out.kind) {
    case engine::ModelKind::kLogReg:
    case engine::ModelKind::kMlp:
      break;
    case engine::ModelKind::kCnn: {
      const int rank = dataset.shape_size();
      if (rank == 2 || rank == 3) {
        out.image_channels = rank == 3 ? dataset.shape(0) : 1;
        out.image_height = dataset.shape(rank - 2);
      }
      break;
    }
    case engine::ModelKind::kTorchScript:
      out.torchscript_path = model.torchscript_path();
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": \"", model.architecture(), "\" is not a classifier"));
  }
  out.hidden.assign(model.hidden().begin(), model.hidden().end());
  out.dropout = model.dropout();
  return out;
}

}  // namespace memaudit::worker
