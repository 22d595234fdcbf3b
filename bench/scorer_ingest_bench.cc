// bench/scorer_ingest: observations per second into a real scorer through
// ScorerService.Ingest, from one stream and from many concurrent streams.
//
//   build/bin/scorer_ingest_bench [--streams=1,4,16] [--seconds=10] [--reps=1]
//       [--pool=2000] [--models-per-task=1] [--models-per-audit=1024]
//       [--max-observations=30000] [--dir=DIR] [--keep-dir=0] [--bin-dir=DIR]
//
// Starts a real scorer and coordinator (EmbeddedCluster, mutual TLS, no
// workers) and submits membership audits of --models-per-audit reference
// models through the coordinator, so the scorer holds each audit's plan. Each stream then does what
// a worker does when a task ends: it opens Ingest and sends the task's observations (signals phi
// and loss,
// --pool values each, and loss_population, the spec's default 1000 values,
// for each of the task's --models-per-task models), with the capability the
// coordinator would hand out with the lease (common/security/capability.h, made here
// from the cluster's key file), then closes the stream and takes the next
// task. Every observation is a new (audit, run, signal) and is stored; the
// last task of each audit is never sent, so no audit completes and no scoring
// runs during the measurement.
//
// Each configuration (a number of concurrent streams, each on its own
// connection) runs --seconds or until --max-observations observations, and
// counts until its last stream is acknowledged. With --reps=R every
// configuration runs R times, interleaved round by round, and the medians are
// reported, with the ratio of each configuration's observations/s to one
// stream's.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "audits/membership/scorer_metrics.h"
#include "audits/membership/tasks.h"
#include "bench/bench_util.h"
#include "bench/proc_stats.h"
#include "cli/embedded_cluster.h"
#include "common/base/process.h"
#include "common/base/seeding.h"
#include "common/security/capability.h"
#include "common/security/tls.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "memaudit/v1/scorer.grpc.pb.h"

namespace {

using memaudit::bench::Flag;
using memaudit::bench::FlagInt;
using memaudit::bench::Median;
using memaudit::bench::Seconds;
namespace v1 = memaudit::v1;

// audits/membership/scorer_metrics.cc's RequiredMembershipSignals (the
// scorer's library is not linked here): what every model sends.
std::vector<std::string> RequiredSignals(const v1::MembershipAudit& m) {
  std::vector<std::string> signals = {memaudit::scorer::kPhiSignal, memaudit::scorer::kLossSignal};
  if (m.population_size() > 0) signals.push_back(memaudit::scorer::kPopulationLossSignal);
  return signals;
}

using memaudit::bench::Percentile;
using memaudit::bench::ProcCpuSeconds;
using memaudit::bench::ProcStatus;
using memaudit::bench::ReadProcStatus;
using memaudit::bench::RemovedDir;
using memaudit::bench::Reproduce;
using memaudit::bench::ScratchDir;
using memaudit::bench::SelfCpuSeconds;

v1::AuditSpec IngestSpec(uint32_t models, uint32_t pool, uint32_t models_per_task, uint64_t seed) {
  v1::AuditSpec spec;
  spec.set_name(absl::StrCat("scorer-ingest-", seed));
  spec.set_seed(seed);
  spec.mutable_resources()->set_models_per_task(models_per_task);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(pool);
  m->mutable_model()->add_hidden(32);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_momentum(0.9);
  m->mutable_training()->set_epochs(1);
  m->mutable_training()->set_batch_size(64);
  m->set_reference_models(models);
  return spec;
}

// One task's observations, ready to send.
struct TaskBatch {
  std::vector<v1::Observation> observations;
  size_t bytes = 0;  // serialized
};

struct Task {
  std::string audit_id;
  uint32_t index = 0;
  std::string capability;
};

struct ConfigResult {
  uint32_t streams = 0;
  double seconds = 0;
  uint64_t accepted = 0, duplicates = 0, observations = 0, streams_done = 0;
  double bytes = 0;
  double obs_per_s = 0, mb_per_s = 0;
  double stream_p50_ms = 0, stream_p99_ms = 0;
  std::map<std::string, uint64_t> errors;
  long scorer_threads_max = 0, scorer_rss_max_kb = 0;
  double scorer_cores = 0, client_cores = 0;
  bool ran_out = false;
  bool hit_count = false;
};

std::string CodeName(grpc::StatusCode code) {
  // gRPC and absl number their codes alike.
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

class Bench {
 public:
  Bench(std::vector<Task> tasks, const v1::AuditSpec& spec,
        std::vector<std::unique_ptr<v1::ScorerService::Stub>> stubs, pid_t scorer_pid)
      : tasks_(std::move(tasks)), spec_(spec), stubs_(std::move(stubs)), scorer_pid_(scorer_pid) {
    // Values shaped like real ones: phi around 0, losses small and >= 0.
    memaudit::SplitMix64 rng(7);
    const uint32_t pool = spec.membership().dataset().pool_size();
    for (uint32_t i = 0; i < pool; ++i) {
      phi_.Add(8 * rng.UniformDouble() - 4);
      loss_.Add(3 * rng.UniformDouble());
    }
    for (uint32_t i = 0; i < spec.membership().population_size(); ++i) {
      population_.Add(3 * rng.UniformDouble());
    }
    signals_ = RequiredSignals(spec.membership());
  }

  size_t observations_per_task() const {
    return signals_.size() * memaudit::membership::ModelsPerTask(spec_);
  }
  size_t tasks_left() const { return tasks_.size() - next_; }

  TaskBatch Build(const Task& task) const {
    TaskBatch batch;
    const memaudit::membership::ModelRange models =
        memaudit::membership::TaskModels(spec_, task.index);
    for (uint32_t run = models.first; run < models.end(); ++run) {
      for (const std::string& signal : signals_) {
        v1::Observation o;
        o.set_audit_id(task.audit_id);
        o.set_run(run);
        o.set_point(memaudit::scorer::kFinalPoint);
        o.set_signal(signal);
        *o.mutable_values() = signal == memaudit::scorer::kPhiSignal    ? phi_
                              : signal == memaudit::scorer::kLossSignal ? loss_
                                                                        : population_;
        o.set_capability(task.capability);
        batch.bytes += o.ByteSizeLong();
        batch.observations.push_back(std::move(o));
      }
    }
    return batch;
  }

  ConfigResult Run(uint32_t streams, double seconds, uint64_t max_observations) {
    ConfigResult r;
    r.streams = streams;
    std::atomic<uint64_t> taken{0};  // observations claimed
    std::atomic<bool> ran_out{false};
    std::mutex mu;
    std::vector<double> latencies;
    std::atomic<bool> hit_count{false};

    std::atomic<bool> sampling{true};
    std::thread sampler([&] {
      while (sampling) {
        const ProcStatus s = ReadProcStatus(scorer_pid_);
        {
          std::lock_guard<std::mutex> lock(mu);
          r.scorer_threads_max = std::max(r.scorer_threads_max, s.threads);
          r.scorer_rss_max_kb = std::max(r.scorer_rss_max_kb, s.rss_kb);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    });

    const double cpu0_scorer = ProcCpuSeconds(scorer_pid_);
    const double cpu0_self = SelfCpuSeconds();
    const double start = Seconds();
    const double end = start + seconds;
    std::vector<std::thread> threads;
    for (uint32_t s = 0; s < streams; ++s) {
      threads.emplace_back([&, s] {
        v1::ScorerService::Stub* stub = stubs_[s].get();
        std::vector<double> mine;
        uint64_t accepted = 0, duplicates = 0, sent = 0, done = 0;
        double bytes = 0;
        while (Seconds() < end) {
          if (taken.fetch_add(observations_per_task()) >= max_observations) {
            hit_count = true;
            break;
          }
          const size_t i = next_.fetch_add(1);
          if (i >= tasks_.size()) {
            ran_out = true;
            break;
          }
          const TaskBatch batch = Build(tasks_[i]);
          const double t = Seconds();
          v1::IngestResponse resp;
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
          auto writer = stub->Ingest(&ctx, &resp);
          for (const v1::Observation& o : batch.observations) {
            if (!writer->Write(o)) break;
          }
          writer->WritesDone();
          const grpc::Status status = writer->Finish();
          if (!status.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            ++r.errors[CodeName(status.error_code())];
            if (first_error_.empty()) first_error_ = status.error_message().substr(0, 300);
            continue;
          }
          mine.push_back((Seconds() - t) * 1e3);
          accepted += resp.accepted();
          duplicates += resp.duplicates();
          sent += batch.observations.size();
          bytes += static_cast<double>(batch.bytes);
          ++done;
        }
        std::lock_guard<std::mutex> lock(mu);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
        r.accepted += accepted;
        r.duplicates += duplicates;
        r.observations += sent;
        r.streams_done += done;
        r.bytes += bytes;
      });
    }
    for (std::thread& t : threads) t.join();
    const double finished = Seconds();
    sampling = false;
    sampler.join();
    r.seconds = finished - start;
    r.scorer_cores = (ProcCpuSeconds(scorer_pid_) - cpu0_scorer) / r.seconds;
    r.client_cores = (SelfCpuSeconds() - cpu0_self) / r.seconds;
    r.hit_count = hit_count;
    r.obs_per_s = r.accepted / r.seconds;
    r.mb_per_s = r.bytes / r.seconds / 1e6;
    r.stream_p50_ms = Percentile(latencies, 0.5);
    r.stream_p99_ms = Percentile(latencies, 0.99);
    r.ran_out = ran_out;
    return r;
  }

  const std::string& first_error() const { return first_error_; }

 private:
  const std::vector<Task> tasks_;
  const v1::AuditSpec spec_;
  std::vector<std::unique_ptr<v1::ScorerService::Stub>> stubs_;
  const pid_t scorer_pid_;
  std::atomic<size_t> next_{0};
  google::protobuf::RepeatedField<double> phi_, loss_, population_;
  std::vector<std::string> signals_;
  std::string first_error_;
};

void PrintConfig(const ConfigResult& r) {
  std::string errors;
  for (const auto& [code, n] : r.errors) absl::StrAppend(&errors, " ", code, " ", n);
  std::printf(
      "  %2u streams: %9.1f observations/s, %7.2f MB/s (%lu stored, %lu duplicates, %lu streams "
      "in %.2f s%s); stream p50 %.1f ms p99 %.1f ms; scorer CPU %.2f cores, %ld threads max, "
      "RSS max %.1f MiB; load generator CPU %.2f cores; errors%s\n",
      r.streams, r.obs_per_s, r.mb_per_s, static_cast<unsigned long>(r.accepted),
      static_cast<unsigned long>(r.duplicates), static_cast<unsigned long>(r.streams_done),
      r.seconds, r.ran_out ? ", ran out of tasks" : (r.hit_count ? ", --max-observations" : ""),
      r.stream_p50_ms, r.stream_p99_ms, r.scorer_cores, r.scorer_threads_max,
      r.scorer_rss_max_kb / 1024.0, r.client_cores, errors.empty() ? " 0" : errors.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT and SIGTERM stop the services (below) rather than orphan them.
  memaudit::BlockShutdownSignals();
  std::vector<uint32_t> configs;
  for (absl::string_view part : absl::StrSplit(Flag(argc, argv, "streams", "1,4,16"), ',')) {
    uint32_t n = 0;
    if (absl::SimpleAtoi(part, &n) && n > 0) configs.push_back(n);
  }
  if (configs.empty()) {
    std::fprintf(stderr, "--streams: a comma-separated list of positive counts\n");
    return 1;
  }
  const double seconds = std::atof(Flag(argc, argv, "seconds", "10").c_str());
  const int reps = static_cast<int>(std::max<long>(1, FlagInt(argc, argv, "reps", 1)));
  const uint32_t pool = static_cast<uint32_t>(FlagInt(argc, argv, "pool", 2000));
  const uint32_t per_task = static_cast<uint32_t>(FlagInt(argc, argv, "models-per-task", 1));
  // Submit must finish within the coordinator's 5 s deadline for the scorer's
  // OpenAudit, which stores a content key per model: 4096 models of a
  // 2000-example pool take longer than that on a 2-core machine.
  const uint32_t models_per_audit =
      static_cast<uint32_t>(FlagInt(argc, argv, "models-per-audit", 1024));
  const uint64_t max_observations =
      static_cast<uint64_t>(FlagInt(argc, argv, "max-observations", 30000));
  RemovedDir removed;
  const std::string dir = ScratchDir(argc, argv, "scorer_ingest", &removed);
  if (dir.empty()) return 1;
  const std::string reproduce = Reproduce("build/bin/scorer_ingest_bench", argc, argv);

  memaudit::cli::ClusterOptions cluster_options;
  cluster_options.dir = dir;
  cluster_options.workers = 0;
  // Another build's memaudit-coordinator and memaudit-scorer (e.g. an older
  // commit's, to compare); it must hold a memaudit-worker too (never started).
  cluster_options.bin_dir = Flag(argc, argv, "bin-dir", "");
  std::printf("services: %s/memaudit-{coordinator,scorer}\n",
              cluster_options.bin_dir.empty() ? memaudit::ExecutableDir().c_str()
                                              : cluster_options.bin_dir.c_str());
  auto cluster = memaudit::cli::EmbeddedCluster::Start(cluster_options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  std::thread([service = cluster->get(), dir_to_remove = removed.path] {
    const int signal = memaudit::WaitForShutdownSignal();
    std::fprintf(stderr, "signal %d: stopping the coordinator and the scorer\n", signal);
    service->Stop();
    std::error_code ec;
    if (!dir_to_remove.empty()) std::filesystem::remove_all(dir_to_remove, ec);
    std::_Exit(128 + signal);
  }).detach();
  auto key = memaudit::CapabilityKey::FromFile((*cluster)->capability_key_file());
  if (!key.ok()) {
    std::fprintf(stderr, "capability key: %s\n", key.status().ToString().c_str());
    return 1;
  }
  auto client =
      memaudit::MakeChannel((*cluster)->coordinator_address(), (*cluster)->client_credentials());
  if (!client.ok()) {
    std::fprintf(stderr, "channel: %s\n", client.status().ToString().c_str());
    return 1;
  }
  auto audits = v1::AuditService::NewStub(*client);

  // Enough audits for every configuration to reach --max-observations.
  const v1::AuditSpec probe = IngestSpec(models_per_audit, pool, per_task, 1);
  const uint32_t tasks_per_audit = memaudit::membership::TaskCount(probe);
  const uint64_t wanted_observations = max_observations * configs.size() * reps;
  std::vector<Task> tasks;
  v1::AuditSpec defaulted;
  const double submit_start = Seconds();
  size_t audit_count = 0;
  uint64_t capacity = 0;
  while (capacity < wanted_observations) {
    v1::SubmitRequest req;
    *req.mutable_spec() = IngestSpec(models_per_audit, pool, per_task, 500 + audit_count);
    v1::SubmitResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
    const grpc::Status s = audits->Submit(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "Submit: %s\n", s.error_message().c_str());
      return 1;
    }
    ++audit_count;
    if (defaulted.name().empty()) {
      v1::GetRequest get;
      get.set_audit_id(resp.audit_id());
      v1::Audit audit;
      grpc::ClientContext get_ctx;
      if (grpc::Status g = audits->Get(&get_ctx, get, &audit); !g.ok()) {
        std::fprintf(stderr, "Get: %s\n", g.error_message().c_str());
        return 1;
      }
      defaulted = audit.spec();
    }
    // The last task is never sent: the audit never completes, nothing is scored.
    for (uint32_t t = 0; t + 1 < tasks_per_audit; ++t) {
      tasks.push_back(Task{
          resp.audit_id(), t,
          // Lease 1, held by the cluster's worker certificate (CN in-process).
          memaudit::TaskCapability(*key, resp.audit_id(), {memaudit::membership::kModelRole, t},
                                   {1, "worker in-process"})});
    }
    const size_t per = RequiredSignals(defaulted.membership()).size() * per_task;
    capacity = tasks.size() * per;
  }
  const double submit_s = Seconds() - submit_start;

  const uint32_t max_streams = *std::max_element(configs.begin(), configs.end());
  std::vector<std::unique_ptr<v1::ScorerService::Stub>> stubs;
  for (uint32_t i = 0; i < max_streams; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("memaudit.bench.channel", static_cast<int>(i));  // a connection of its own
    auto channel =
        memaudit::MakeChannel((*cluster)->scorer_address(), (*cluster)->worker_credentials(), args);
    if (!channel.ok()) {
      std::fprintf(stderr, "channel: %s\n", channel.status().ToString().c_str());
      return 1;
    }
    stubs.push_back(v1::ScorerService::NewStub(*channel));
  }
  Bench bench(std::move(tasks), defaulted, std::move(stubs), (*cluster)->scorer()->pid());
  const TaskBatch sample = bench.Build(Task{"x", 0, std::string(64, '0')});
  std::printf(
      "scorer ingest: streams %s, %.0f s or %lu observations each, %d rep(s); membership audits "
      "of %u models, pool %u, population %u, models_per_task %u: %zu observations (%.1f KB) per "
      "stream\n",
      Flag(argc, argv, "streams", "1,4,16").c_str(), seconds,
      static_cast<unsigned long>(max_observations), reps, models_per_audit, pool,
      defaulted.membership().population_size(), per_task, sample.observations.size(),
      sample.bytes / 1e3);
  std::printf("setup: %zu audits submitted in %.1f s; %zu tasks to send; %u cores online\n",
              audit_count, submit_s, bench.tasks_left(),
              static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)));

  std::map<uint32_t, std::vector<ConfigResult>> results;
  for (int rep = 0; rep < reps; ++rep) {
    std::printf("round %d\n", rep + 1);
    for (uint32_t streams : configs) {
      results[streams].push_back(bench.Run(streams, seconds, max_observations));
      PrintConfig(results[streams].back());
      if (!bench.first_error().empty()) {
        std::printf("  first error: %s\n", bench.first_error().c_str());
      }
    }
  }
  std::printf("medians of %d:\n", reps);
  double one = 0;
  for (uint32_t streams : configs) {
    std::vector<double> obs, mb;
    for (const ConfigResult& r : results[streams]) {
      obs.push_back(r.obs_per_s);
      mb.push_back(r.mb_per_s);
    }
    if (streams == configs.front()) one = Median(obs);
    std::printf("  %2u streams: %9.1f observations/s, %7.2f MB/s, %.2fx %u stream%s\n", streams,
                Median(obs), Median(mb), one > 0 ? Median(obs) / one : 0, configs.front(),
                configs.front() == 1 ? "" : "s");
  }
  std::printf("reproduce: %s\n", reproduce.c_str());
  std::fflush(stdout);
  (*cluster)->Stop();
  return 0;
}
