// Models/hour of a K-member batched ensemble versus training the same K
// models one at a time with the generic trainer (same threads, data, subsets,
// epochs), versus the Python PyTorch peer in bench/peer/ (MLP only), plus
// achieved GFLOP/s against a large-matmul peak measured in the same run.
// --model=mlp: 784-H-10 MLPs; --model=cnn: BuildModel's default CNN on 28x28
// images (conv 8, conv 16, fc 64; --hidden is ignored), dropout --dropout.
//
//   build-engine/bin/ensemble_bench [--model=mlp] [--members=8] [--pool=4096]
//       [--epochs=1] [--batch=128] [--hidden=128] [--dropout=0] [--threads=2]
//       [--reps=3] [--peer=1] [--device=cpu] [--matmul_precision=fp32]
//       [--separation=1] (synthetic data only: without Fashion-MNIST)
// On CUDA each timed run ends with a device synchronize (the ensemble's
// steps are queued, not awaited); every rep prints the trained ensemble's
// loss, accuracy and a hash of its logits, and "repeatable" says whether the
// reps' hashes agree (same bits run to run).
#include <torch/cuda.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string_view>

#include "bench/bench_util.h"
#include "common/base/seeding.h"
#include "common/base/steps.h"
#include "data/labeled_examples.h"
#include "engine/device.h"
#include "engine/ensemble.h"
#include "engine/trainer.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

namespace {

template <typename T>
void WriteRaw(const std::string& path, const T* data, size_t n) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), n * sizeof(T));
}

double PeakGflops(int threads) {
  torch::set_num_threads(threads);
  torch::Tensor a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  std::vector<double> s;
  for (int r = 0; r < 5; ++r) {
    const double t0 = bench::Seconds();
    torch::mm(a, b);
    s.push_back(bench::Seconds() - t0);
  }
  return 2.0 * 1024 * 1024 * 1024 / bench::Median(s) / 1e9;
}

// The trained members' mean loss and accuracy over `data`, and a hash of
// their logits' bits.
struct Fingerprint {
  double loss, accuracy;
  size_t hash;
  torch::Tensor logits;  // [K, N, classes] on the CPU
};

Fingerprint FingerprintOf(EnsembleTrainer& e, const TensorDataset& data) {
  torch::Tensor logits = e.Logits(data.x()).to(torch::kCPU).contiguous();
  const int64_t k = logits.size(0), n = logits.size(1);
  torch::Tensor y = data.y().unsqueeze(0).expand({k, n}).reshape({-1});
  torch::Tensor flat = logits.reshape({k * n, -1});
  Fingerprint f;
  f.loss = torch::nn::functional::cross_entropy(flat, y).item<double>();
  f.accuracy = flat.argmax(1).eq(y).to(torch::kFloat64).mean().item<double>();
  f.hash = std::hash<std::string_view>()(
      std::string_view(static_cast<const char*>(logits.data_ptr()), logits.nbytes()));
  f.logits = logits;
  return f;
}

void Synchronize(const std::string& device) {
  if (device != "cpu") torch::cuda::synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  const int k = static_cast<int>(bench::FlagInt(argc, argv, "members", 8));
  const uint32_t pool = static_cast<uint32_t>(bench::FlagInt(argc, argv, "pool", 4096));
  const uint32_t epochs = static_cast<uint32_t>(bench::FlagInt(argc, argv, "epochs", 1));
  const uint32_t batch = static_cast<uint32_t>(bench::FlagInt(argc, argv, "batch", 128));
  const uint32_t hidden = static_cast<uint32_t>(bench::FlagInt(argc, argv, "hidden", 128));
  const uint32_t threads = static_cast<uint32_t>(bench::FlagInt(argc, argv, "threads", 2));
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 3));
  const std::string model = bench::Flag(argc, argv, "model", "mlp");
  const bool cnn = model == "cnn";
  const double dropout = std::atof(bench::Flag(argc, argv, "dropout", "0").c_str());
  const bool peer = bench::FlagInt(argc, argv, "peer", 1) != 0 && !cnn;
  const std::string device = bench::Flag(argc, argv, "device", "cpu");
  const std::string precision = bench::Flag(argc, argv, "matmul_precision", "fp32");
  if (absl::StatusOr<std::string> d = SetDefaultDevice(device); !d.ok()) {
    std::fprintf(stderr, "%s\n", std::string(d.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = SetMatmulPrecision(precision); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }

  // Fashion-MNIST when installed, else synthetic blobs of the same shape.
  const uint32_t n = 2 * pool;
  TensorDataset data;
  std::string source = "Fashion-MNIST";
  if (auto images = data::LoadMnistLayout(data::kFashionMnistDir, "train"); images.ok()) {
    std::vector<uint32_t> rows(n);
    for (uint32_t i = 0; i < n; ++i) rows[i] = i;
    data = FromLabeledExamples(**images, rows);
  } else {
    // --separation: how far apart the blobs' centres are (smaller: harder).
    data = SyntheticBlobs(n, 784, 10, std::atof(bench::Flag(argc, argv, "separation", "1").c_str()),
                          1);
    source = "synthetic";
  }
  if (model != "mlp" && !cnn) {
    std::fprintf(stderr, "--model: mlp or cnn\n");
    return 2;
  }
  ModelSpec spec;
  spec.kind = cnn ? ModelKind::kCnn : ModelKind::kMlp;
  spec.inputs = 784;
  spec.classes = 10;
  spec.dropout = dropout;
  if (!cnn) spec.hidden = {hidden};
  // Multiply-adds per example, forward; the CNN's are BuildModel's defaults.
  const double macs =
      cnn ? 28.0 * 28 * 8 * 25 + 14.0 * 14 * 16 * 8 * 25 + 16.0 * 7 * 7 * 64 + 64.0 * 10
          : 784.0 * hidden + hidden * 10.0;
  TrainerOptions options;
  options.optimizer.kind = OptimizerKind::kMomentum;
  options.optimizer.learning_rate = 0.05;
  options.threads = threads;
  options.device = device;
  std::vector<EnsembleMember> members;
  std::vector<int64_t> all_pools;
  for (int i = 0; i < k; ++i) {
    EnsembleMember m{static_cast<uint64_t>(i),
                     static_cast<uint64_t>(100 + i),
                     {},
                     static_cast<uint64_t>(200 + i)};
    for (uint32_t r : AuditPool(DeriveSeed(1, "bench.pool", i), n, pool)) m.pool.push_back(r);
    all_pools.insert(all_pools.end(), m.pool.begin(), m.pool.end());
    members.push_back(std::move(m));
  }
  const uint64_t steps = epochs * StepsPerEpoch(pool, batch);

  std::vector<double> solo_s, ens_s;
  std::vector<Fingerprint> prints;
  for (int r = 0; r < reps; ++r) {
    double t0 = bench::Seconds();
    for (const EnsembleMember& m : members) {
      TrainerOptions alone = options;
      alone.dropout_seed = m.dropout_seed;
      auto t = Trainer::Create([&] { return BuildModel(spec, m.init_seed); }, alone);
      (void)(*t)->Train(data, EpochSchedule(m.pool, batch, m.order_seed), steps);
    }
    Synchronize(device);
    solo_s.push_back(bench::Seconds() - t0);
    t0 = bench::Seconds();
    auto e = EnsembleTrainer::Create(spec, options, members, batch);
    (void)(*e)->Train(data, steps);
    Synchronize(device);
    ens_s.push_back(bench::Seconds() - t0);
    prints.push_back(FingerprintOf(**e, data));
  }
  const double solo_mph = k * 3600 / bench::Median(solo_s);
  const double ens_mph = k * 3600 / bench::Median(ens_s);
  const double flops = 3.0 * 2.0 * batch * macs * steps * k;
  const double peak = device == "cpu" ? PeakGflops(static_cast<int>(threads)) : 0;
  const std::string arch =
      cnn ? "CNN 28x28 conv8-conv16-fc64-10" : "MLP 784-" + std::to_string(hidden) + "-10";
  std::printf(
      "data: %s, %d members x %u rows, %s, dropout %g, batch %u, %u epoch(s), %u threads, "
      "device %s, %s products\n",
      source.c_str(), k, pool, arch.c_str(), dropout, batch, epochs, threads, device.c_str(),
      precision.c_str());
  bool repeatable = true;
  for (const Fingerprint& f : prints) repeatable = repeatable && f.hash == prints[0].hash;
  std::printf("trained ensemble: loss %.6f, accuracy %.6f on all %u rows; repeatable: %s\n",
              prints[0].loss, prints[0].accuracy, n, repeatable ? "yes" : "NO");
  if (precision != "fp32" && SetMatmulPrecision("fp32").ok()) {
    // The same ensemble at fp32, for what the reduced precision changed.
    auto exact = EnsembleTrainer::Create(spec, options, members, batch);
    (void)(*exact)->Train(data, steps);
    const Fingerprint f = FingerprintOf(**exact, data);
    const torch::Tensor& a = prints[0].logits;
    std::printf(
        "against fp32: loss %.6f vs %.6f, max |logit difference| %.3g, predictions that differ "
        "%.4f%%\n",
        prints[0].loss, f.loss, (a - f.logits).abs().max().item<double>(),
        100 * a.argmax(2).ne(f.logits.argmax(2)).to(torch::kFloat64).mean().item<double>());
    (void)SetMatmulPrecision(precision);
  }
  std::printf("one at a time: %.0f models/hour (median %.3f s)\n", solo_mph, bench::Median(solo_s));
  std::printf(
      "ensemble:      %.0f models/hour (median %.3f s), %.1f GFLOP/s = %.0f%% of a "
      "1024^3 matmul peak of %.1f GFLOP/s\n",
      ens_mph, bench::Median(ens_s), flops / bench::Median(ens_s) / 1e9,
      100 * flops / bench::Median(ens_s) / 1e9 / peak, peak);
  std::printf("RESULT %s ensemble vs one-at-a-time: %.2fx (ratio of medians; per-rep:",
              model.c_str(), ens_mph / solo_mph);
  for (int r = 0; r < reps; ++r) std::printf(" %.2fx", solo_s[r] / ens_s[r]);
  std::printf(")\n");

  std::string python;
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    if (python.empty() &&
        std::system((std::string(py) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
      python = py;
    }
  }
  if (peer && !python.empty()) {
    const std::string base = "/tmp/memaudit_ensemble_bench";
    torch::Tensor x = data.x().contiguous(), y = data.y().contiguous();
    const int64_t meta[4] = {n, 784, 10, pool};
    WriteRaw(base + ".meta", meta, 4);
    WriteRaw(base + ".x", x.data_ptr<float>(), x.numel());
    WriteRaw(base + ".y", y.data_ptr<int64_t>(), y.numel());
    WriteRaw(base + ".pools", all_pools.data(), all_pools.size());
    const std::string cmd =
        python + " " + MEMAUDIT_SOURCE_DIR + "/bench/peer/ensemble_peer.py --data=" + base +
        " --members=" + std::to_string(k) + " --epochs=" + std::to_string(epochs) +
        " --batch=" + std::to_string(batch) + " --hidden=" + std::to_string(hidden) +
        " --threads=" + std::to_string(threads) + " --reps=" + std::to_string(reps);
    FILE* pipe = popen(cmd.c_str(), "r");
    double peer_mph = 0;
    if (pipe != nullptr && std::fscanf(pipe, "models_per_hour %lf", &peer_mph) == 1) {
      std::printf("peer (PyTorch, one model at a time): %.0f models/hour\n", peer_mph);
      std::printf("RESULT ensemble vs peer: %.2fx (target >= 3x)\n", ens_mph / peer_mph);
    } else {
      std::printf("peer: failed to run: %s\n", cmd.c_str());
    }
    if (pipe != nullptr) pclose(pipe);
  } else {
    std::printf("peer: skipped (python3-torch absent, --peer=0 or --model=cnn)\n");
  }
  std::printf(
      "reproduce: build-engine/bin/ensemble_bench --model=%s --members=%d --pool=%u --epochs=%u "
      "--batch=%u --hidden=%u --dropout=%g --threads=%u --reps=%d --device=%s "
      "--matmul_precision=%s\n",
      model.c_str(), k, pool, epochs, batch, hidden, dropout, threads, reps, device.c_str(),
      precision.c_str());
  return 0;
}
