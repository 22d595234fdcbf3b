// The SHA-256 that names a dataset's bytes (data/sha256.h) on 32 MiB, as the
// CPU runs it (the x86 SHA extensions where present) against the portable
// rounds, interleaved in one run; prints MB/s of each and the ratio.
//   build/bin/sha256_bench [--mib=32] [--reps=7]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "data/sha256.h"

using namespace memaudit;  // NOLINT

int main(int argc, char** argv) {
  const int64_t mib = bench::FlagInt(argc, argv, "mib", 32);
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 7));
  std::string bytes(static_cast<size_t>(mib) << 20, '\0');
  uint64_t x = 88172645463325252ULL;
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  std::vector<double> chosen_s, portable_s;
  bool same = true;
  for (int r = 0; r < reps; ++r) {
    double t0 = bench::Seconds();
    const std::string a = data::Sha256Hex(bytes);
    chosen_s.push_back(bench::Seconds() - t0);
    t0 = bench::Seconds();
    const std::string b = data::internal::PortableSha256Hex(bytes);
    portable_s.push_back(bench::Seconds() - t0);
    same = same && a == b;
  }
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  std::printf("SHA extensions: %s; digests agree: %s\n",
              data::internal::UsesShaExtensions() ? "yes" : "no", same ? "yes" : "NO");
  std::printf("portable: %.0f MB/s, as run: %.0f MB/s (medians of %d)\n",
              mb / bench::Median(portable_s), mb / bench::Median(chosen_s), reps);
  std::printf("RESULT sha256 as run vs portable: %.2fx\n",
              bench::Median(portable_s) / bench::Median(chosen_s));
  std::printf("reproduce: build/bin/sha256_bench --mib=%lld --reps=%d\n",
              static_cast<long long>(mib), reps);
  return same ? 0 : 1;
}
