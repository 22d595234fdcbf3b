// memaudit-scorer: stores worker observations and computes audit metrics.
#include <spdlog/spdlog.h>

#include <chrono>

#include "CLI/CLI.hpp"
#include "common/base/process.h"
#include "common/rpc/serving.h"
#include "common/security/capability.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_service.h"
#include "services/scorer/scorer_store.h"

int main(int argc, char** argv) {
  using namespace memaudit;
  BlockShutdownSignals();
  CLI::App app{
      "memaudit scorer: persists per-example signals from workers, computes each "
      "audit's privacy metrics once its inputs are complete, and exports them."};
  ServingFlags serving_flags;
  AddServingFlags(&app, &serving_flags, "127.0.0.1:7401", "127.0.0.1:9401");
  std::string db_path = "memaudit-scorer.db";
  sql::OpenOptions db_options;
  app.add_option("--db", db_path,
                 "SQLite database file: created if missing; checked (PRAGMA quick_check) at "
                 "start, and a damaged one is refused")
      ->capture_default_str();
  app.add_flag("--init", db_options.init_empty_file,
               "accept an existing empty (0-byte) --db file and create the database in it; "
               "without it an empty file is refused, as a truncated database looks the same");
  std::string capability_key_file;
  AddCapabilityKeyFlag(&app, &capability_key_file);
  scorer::ScorerOptions scorer_options;
  app.add_flag("--cross-team-reuse", scorer_options.cross_team_reuse,
               "content-keyed reuse may copy runs another team's audit trained (default: only "
               "the same team's)");
  CLI11_PARSE(app, argc, argv);
  InitLogging("scorer");

  auto store = scorer::ScorerStore::Open(db_path, db_options);
  if (!store.ok()) {
    spdlog::critical("{}", store.status().ToString());
    return 1;
  }
  prometheus::Registry registry;
  auto scorer = scorer::Scorer::Create(store->get(), &registry, scorer_options);
  if (!scorer.ok()) {
    spdlog::critical("{}", scorer.status().ToString());
    return 1;
  }
  auto auth = MakeAuthenticator(serving_flags);
  if (!auth.ok()) {
    spdlog::critical("{}", auth.status().ToString());
    return 1;
  }
  auto capability_key = LoadCapabilityKey(capability_key_file, serving_flags.tls);
  if (!capability_key.ok()) {
    spdlog::critical("{}", capability_key.status().ToString());
    return 1;
  }
  scorer::ScorerServiceImpl service(auth->get(), scorer->get(), *std::move(capability_key));
  auto serving =
      StartServing(serving_flags, {&service}, &registry,
                   std::make_shared<CallGate>(auth->get(), scorer::ScorerCallPolicy(), &registry));
  if (!serving.ok()) {
    spdlog::critical("{}", serving.status().ToString());
    return 1;
  }
  spdlog::info("serving on port {} (metrics on {}), database {}", serving->port,
               serving->metrics->port(), db_path);
  const int signal = WaitForShutdownSignal();
  spdlog::info("signal {}: shutting down", signal);
  // WatchResults streams end now (UNAVAILABLE: watch again) instead of
  // waiting for the shutdown deadline to cancel them; the deadline bounds
  // only calls still running (an Ingest mid-stream).
  (*scorer)->results_changes().Stop();
  serving->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // No call is left: close the scorer and its database, then exit.
  *scorer = nullptr;
  *store = nullptr;
  ExitServed(0);
}
