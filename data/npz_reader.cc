#include "data/npz_reader.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "data/npy_reader.h"
#include "data/zip_reader.h"

namespace memaudit::data {
namespace {

// Enough names to recognise the archive, not a hostile directory's worth.
constexpr size_t kMaxNamesListed = 20;

std::string EntryList(const std::vector<ZipEntry>& entries) {
  if (entries.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < entries.size() && i < kMaxNamesListed; ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ", absl::CHexEscape(entries[i].name.substr(0, 100)));
  }
  if (entries.size() > kMaxNamesListed) {
    absl::StrAppend(&out, " and ", entries.size() - kMaxNamesListed, " more");
  }
  return out;
}

// The entry "<key>.npy", parsed; `field` names the key in errors.
absl::StatusOr<NpyArray> EntryArray(absl::string_view archive, absl::string_view path,
                                    const std::vector<ZipEntry>& entries, absl::string_view field,
                                    absl::string_view key, std::string* where,
                                    std::string* storage) {
  const std::string name = absl::StrCat(key, ".npy");
  const ZipEntry* found = nullptr;
  for (const ZipEntry& e : entries) {
    if (e.name != name) continue;
    if (found != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", path, " has two entries named '", absl::CHexEscape(name), "'"));
    }
    found = &e;
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", path, " has no entry '",
                                                   absl::CHexEscape(name),
                                                   "' (entries: ", EntryList(entries), ")"));
  }
  *where = absl::StrCat(field, ": ", path, " entry '", absl::CHexEscape(name), "'");
  MEMAUDIT_ASSIGN_OR_RETURN(const absl::string_view bytes,
                            ZipEntryBytes(archive, *found, *where, storage));
  return ParseNpy(bytes, *where);
}

}  // namespace

absl::StatusOr<LabeledExamples> ParseNpz(absl::string_view bytes, absl::string_view path,
                                         absl::string_view features_key,
                                         absl::string_view labels_key) {
  MEMAUDIT_ASSIGN_OR_RETURN(const std::vector<ZipEntry> entries,
                            ReadZipDirectory(bytes, absl::StrCat("path: ", path)));
  // Deflated entries are inflated into these; stored ones are viewed in place.
  std::string features_storage, labels_storage, features_where, labels_where;
  MEMAUDIT_ASSIGN_OR_RETURN(const NpyArray features,
                            EntryArray(bytes, path, entries, "features_key", features_key,
                                       &features_where, &features_storage));
  MEMAUDIT_ASSIGN_OR_RETURN(
      const NpyArray labels,
      EntryArray(bytes, path, entries, "labels_key", labels_key, &labels_where, &labels_storage));
  return ExamplesFromNpy(features, features_where, labels, labels_where);
}

}  // namespace memaudit::data
