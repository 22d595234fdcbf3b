#include "audits/membership/cli_privacy_meter_export.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/base/seeding.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace memaudit::cli {
namespace {

using ::memaudit::testing::StatusIs;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NpyFileTest, HeaderFollowsTheFormat) {
  const std::string npy = NpyFile("|b1", {2, 3}, std::string("\1\0\1\0\1\0", 6));
  ASSERT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<uint8_t>(npy[8]) | (static_cast<uint8_t>(npy[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = npy.substr(10, header_len);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(header.find("'shape': (2,3)"), std::string::npos) << header;
  EXPECT_EQ(npy.size(), 10 + header_len + 6);
  EXPECT_NE(NpyFile("<u4", {5}, std::string(20, '\0')).find("'shape': (5,)"), std::string::npos);
}

TEST(PrivacyMeterExportTest, NumpyReadsTheMembershipMatrix) {
  v1::Audit audit;
  audit.set_audit_id("a-1");
  v1::AuditSpec* spec = audit.mutable_spec();
  spec->set_seed(5);
  v1::MembershipAudit* m = spec->mutable_membership();
  m->mutable_dataset()->set_name("fashion_mnist");
  m->mutable_dataset()->set_pool_size(31);
  m->mutable_model()->set_architecture("mlp");
  m->mutable_model()->add_hidden(16);
  m->mutable_training()->set_optimizer("sgd");
  m->mutable_training()->set_epochs(3);
  m->set_reference_models(4);
  v1::AuditResults results;
  results.set_kind(v1::MEMBERSHIP);

  const std::string dir = ::testing::TempDir() + "/pm_export_" + std::to_string(getpid());
  MEMAUDIT_ASSERT_OK(WritePrivacyMeterExport(audit, results, dir));

  auto metadata = nlohmann::json::parse(ReadAll(dir + "/models/models_metadata.json"));
  ASSERT_EQ(metadata.size(), 4u);
  const KeepMatrix keep = BuildKeepMatrix(5, 4, 31);
  for (uint32_t i = 0; i < 4; ++i) {
    uint32_t in = 0;
    for (uint32_t j = 0; j < 31; ++j) in += keep.in(i, j);
    EXPECT_EQ(metadata[std::to_string(i)]["num_train"], in);
    EXPECT_EQ(metadata[std::to_string(i)]["model_name"], "mlp-16");
  }
  // NumPy itself (installed by scripts/install-deps.sh) reads the files back.
  // Debian's python3-numpy installs for /usr/bin/python3 (a pyenv python3 on
  // PATH may not see it).
  const std::string check = "/usr/bin/python3 -c \"import numpy as np, json, sys; d='" + dir +
                            "'; m=np.load(d+'/models/memberships.npy'); "
                            "p=np.load(d+'/pool_indices.npy'); "
                            "meta=json.load(open(d+'/models/models_metadata.json')); "
                            "assert m.dtype==bool and m.shape==(4,31), (m.dtype, m.shape); "
                            "assert (m.sum(axis=0)==2).all(); "
                            "assert [int(x) for x in m.sum(axis=1)]==[meta[str(i)]['num_train'] "
                            "for i in range(4)]; "
                            "assert p.dtype==np.uint32 and p.shape==(31,) and len(set(p))==31\"";
  EXPECT_EQ(std::system(check.c_str()), 0) << check;

  v1::Audit other = audit;
  other.mutable_spec()->mutable_forgetting();
  EXPECT_THAT(WritePrivacyMeterExport(other, results, dir),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace memaudit::cli
