#include "cli/export_files.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "common/messages/export_arrays.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

using ::memaudit::testing::IsOk;

std::string Output(const std::string& command) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
  return out;
}

std::vector<v1::ExportArray> SampleArrays() {
  return {MakeExportArray("phi", {"model", "example"}, {2, 3}, v1::FLOAT64, "phi",
                          {0.1, -2.5, 1e300, 0.0, -0.0, 3.0 / 7.0}),
          MakeExportArray("keep", {"example"}, {3}, v1::UINT8, "keep", {1, 0, 255}),
          MakeExportArray("rank", {"variant", "canary", "trial"}, {1, 2, 2}, v1::INT64, "rank",
                          {1, 9007199254740992.0, -3, 42}),
          MakeExportArray("none", {"model", "example"}, {0, 4}, v1::FLOAT64, "empty", {})};
}

// NumPy itself reads what was written: every value, shape and type.
constexpr char kCheck[] = R"PY(
import json, sys, numpy as np
d = sys.argv[1]
want = {
  'phi': np.array([[0.1, -2.5, 1e300], [0.0, -0.0, 3.0/7.0]]),
  'keep': np.array([1, 0, 255], dtype=np.uint8),
  'rank': np.array([[[1, 9007199254740992], [-3, 42]]], dtype=np.int64),
  'none': np.zeros((0, 4)),
}
def same(a, b):
  return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
ok = all(same(np.load(f'{d}/{k}.npy'), v) for k, v in want.items())
with np.load(sys.argv[2]) as z:
  ok = ok and sorted(z.files) == sorted(want) and all(same(z[k], v) for k, v in want.items())
rows = open(f'{d}/rank.csv').read().splitlines()
ok = ok and rows[0] == 'variant,canary,trial,rank' and rows[2] == '0,0,1,9007199254740992'
phi = open(f'{d}/phi.csv').read().splitlines()
ok = ok and all(float(r.split(',')[2]) == want['phi'][int(r.split(',')[0]), int(r.split(',')[1])] for r in phi[1:])
schema = json.load(open(f'{d}/schema.json'))
ok = ok and schema['kind'] == 'membership' and [a['dtype'] for a in schema['arrays']] == ['float64', 'uint8', 'int64', 'float64']
print('numpy agrees' if ok else 'MISMATCH')
)PY";

TEST(ExportFilesTest, NumpyReadsTheNpyFilesTheNpzAndTheCsv) {
  const std::string dir = ::testing::TempDir() + "/export_files_" + std::to_string(getpid());
  const std::string npz = dir + ".npz";
  ASSERT_THAT(WriteExportDirectory(dir, "a-1", "membership", SampleArrays()), IsOk());
  ASSERT_THAT(WriteNpz(npz, SampleArrays()), IsOk());
  const std::string script = dir + "_check.py";
  std::ofstream(script) << kCheck;
  EXPECT_EQ(Output("/usr/bin/python3 " + script + " " + dir + " " + npz + " 2>&1"),
            "numpy agrees\n");
}

TEST(ExportFilesTest, TheSameArraysGiveTheSameBytes) {
  const std::string base = ::testing::TempDir() + "/export_files_same_" + std::to_string(getpid());
  ASSERT_THAT(WriteNpz(base + "1.npz", SampleArrays()), IsOk());
  ASSERT_THAT(WriteNpz(base + "2.npz", SampleArrays()), IsOk());
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(bytes(base + "1.npz"), bytes(base + "2.npz"));
  EXPECT_EQ(NpyBytes(SampleArrays()[0]).size() % 64, (2 * 3 * 8) % 64);  // header padded to 64
}

}  // namespace
}  // namespace memaudit::cli
