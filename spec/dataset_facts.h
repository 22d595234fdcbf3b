// A classifier audit's dataset between the spec and the files: which source
// a DatasetSpec names, the facts Submit reads from it (rows, features,
// classes, shape, content hash), and the check a worker makes that the files
// it reads are still the ones the audit was accepted with.
#ifndef MEMAUDIT_SPEC_DATASET_FACTS_H_
#define MEMAUDIT_SPEC_DATASET_FACTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/data_source.h"
#include "data/labeled_examples.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// The spec's source (format "" is the built-in Fashion-MNIST).
absl::StatusOr<data::DataSource> DataSourceOf(const v1::DatasetSpec& dataset);

// Training rows the dataset holds: `rows` as Submit recorded it; specs
// accepted before datasets recorded it are Fashion-MNIST (60000).
uint32_t DatasetRows(const v1::DatasetSpec& dataset);

// The content hash Submit records for the built-in Fashion-MNIST (format
// fashion_mnist, no path): the Debian package's files are not read at Submit.
inline constexpr char kBuiltinFashionMnistHash[] = "builtin:fashion_mnist";
bool IsBuiltinDataset(const v1::DatasetSpec& dataset);

// Reads the source and records rows, features, classes, shape and
// content_hash in `dataset`, plus a default name. INVALID_ARGUMENT (or
// NOT_FOUND) naming `field` + the source field on a file that cannot be read
// or does not hold a classification dataset, and on a pinned content_hash
// that the files no longer have.
absl::Status ResolveDataset(v1::DatasetSpec* dataset, absl::string_view field);

// The examples a task trains on: the source read (cached per process) and
// checked against the facts Submit recorded, so a file replaced since then
// fails the task instead of silently training on other data.
absl::StatusOr<const data::LabeledExamples*> LoadAuditDataset(const v1::DatasetSpec& dataset,
                                                              absl::string_view field);

// Reads a target's members file (one 0-based row index per line; blank
// lines and lines starting with '#' skipped), each index < `rows`, no
// repeats. At most `rows` entries are read. `field` names the file.
absl::StatusOr<std::vector<uint32_t>> ReadMemberRows(const std::string& path, uint32_t rows,
                                                     absl::string_view field);

// "sha256:<hex>" over each file (field, path) in order, each as its
// 8-byte little-endian length then its bytes. Errors name the file's field.
absl::StatusOr<std::string> FilesContentHash(
    const std::vector<std::pair<std::string, std::string>>& field_paths);

// A tokenizer's model file (`field`: "exposure.model.tokenizer.model_path"),
// read once: its bytes and its FilesContentHash. Refused past
// tokenizers::kMaxModelBytes before a byte of it is read.
struct TokenizerFile {
  std::string bytes;
  std::string content_hash;
};
absl::StatusOr<TokenizerFile> ReadTokenizerModel(const std::string& path, const std::string& field);

// Records the target's member count and the content hash of its model file
// then its members file. `field` is the target's ("membership.target").
absl::Status ResolveTarget(v1::TargetModelSpec* target, uint32_t rows, absl::string_view field);

// A language model's target over documents: its module and the text it
// trained on (members_path, at most kMaxMembersTextBytes, refused from its
// size before a byte is read). Records the content hash of both and, as
// `members`, the text's lines; returns the text.
inline constexpr uint64_t kMaxMembersTextBytes = uint64_t{16} << 20;
absl::StatusOr<std::string> ResolveDocumentsTarget(v1::TargetModelSpec* target,
                                                   absl::string_view field);

}  // namespace memaudit

#endif  // MEMAUDIT_SPEC_DATASET_FACTS_H_
