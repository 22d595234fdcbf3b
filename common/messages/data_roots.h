// Data roots: the directories whose files a spec may name. A spec's file
// paths (common/messages/spec_paths.h: dataset.path, corpus.path,
// model.torchscript_path) must lie at or below one of them once symlinks are
// resolved, so a spec cannot make a service read what its operator did not
// put there (/etc/shadow, another audit's database). The coordinator checks
// at Submit; each worker checks again on its own host before it runs a task,
// since it is the worker that reads the files. An empty path (the built-in
// default dataset or corpus) is always allowed.
#ifndef MEMAUDIT_COMMON_MESSAGES_DATA_ROOTS_H_
#define MEMAUDIT_COMMON_MESSAGES_DATA_ROOTS_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// The directories read when a spec leaves a path empty: Debian's
// Fashion-MNIST and fortune packages (data/labeled_examples.h's
// kFashionMnistDir and engine/text_corpus.h's kFortunesDir; common/ does not
// include those, so services/worker/task_runner_test.cc checks they agree).
inline constexpr const char* kDefaultDataRoots[] = {"/usr/share/datasets/fashion-mnist",
                                                    "/usr/share/games/fortunes"};

// The help text of every `--data-root` flag, before its default.
inline constexpr char kDataRootFlagHelp[] =
    "directory whose files specs may name (dataset.path, corpus.path, model.torchscript_path); "
    "repeat for several; symlinks are resolved";

class DataRoots {
 public:
  // No roots: every non-empty path is refused.
  DataRoots() = default;

  // Each of `roots` resolved (symlinks followed, made absolute). NOT_FOUND
  // naming a root that does not exist, INVALID_ARGUMENT one that is not a
  // directory.
  static absl::StatusOr<DataRoots> Create(const std::vector<std::string>& roots);
  // kDefaultDataRoots, those that exist on this host (a missing one holds
  // nothing to read).
  static DataRoots Defaults();
  // A `--data-root` flag's values: Create(given), or Defaults() when none.
  static absl::StatusOr<DataRoots> FromFlag(const std::vector<std::string>& given);

  // The resolved roots, absolute and without symlinks.
  const std::vector<std::string>& roots() const { return roots_; }

  // "" when `path` may be read: empty, or absolute and at or below a root
  // once resolved on this host (std::filesystem::weakly_canonical: symlinks
  // of the part that exists are followed, the rest is normalised lexically,
  // so `..` cannot climb out); compared by path components, so /data-evil is
  // not under /data. Otherwise the rule it breaks, quoting a short prefix of
  // the path: "must lie under a data root (/data; got "/etc/shadow")".
  std::string Problem(absl::string_view path) const;
  // OK, or INVALID_ARGUMENT "<field>: <Problem(path)>".
  absl::Status Check(absl::string_view field, absl::string_view path) const;
  // Check for every path of `spec` (SpecPaths); INVALID_ARGUMENT lists each
  // path outside, by field.
  absl::Status CheckSpec(const v1::AuditSpec& spec) const;

 private:
  std::vector<std::filesystem::path> resolved_;
  std::vector<std::string> roots_;  // resolved_ as strings
};

// For logs: the roots, or that there are none.
std::string DescribeDataRoots(const DataRoots& roots);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_DATA_ROOTS_H_
