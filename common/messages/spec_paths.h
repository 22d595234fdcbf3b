// The files a spec names. A spec field that names a file or folder on the
// workers' hosts is a string field called `path` or ending in `_path`
// (spec.proto); SpecPaths finds every such field by walking the message, so a
// kind or path field added to spec.proto is covered without a list to keep.
// common/messages/data_roots.h checks the paths against the data roots.
#ifndef MEMAUDIT_COMMON_MESSAGES_SPEC_PATHS_H_
#define MEMAUDIT_COMMON_MESSAGES_SPEC_PATHS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

struct SpecPath {
  std::string field;  // named from the spec's root, as the validators name it:
                      // "membership.dataset.path", "forgetting.canaries.corpus.path"
  std::string path;   // never empty (an empty path means the built-in default)
};

// Whether a field of this name names a file: "path" or "*_path".
bool IsPathFieldName(absl::string_view name);

// Every non-empty path field set in `spec`, in field-number order.
std::vector<SpecPath> SpecPaths(const v1::AuditSpec& spec);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_SPEC_PATHS_H_
