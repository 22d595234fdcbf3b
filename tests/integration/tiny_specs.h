// Audit specs of every kind small enough to finish in seconds on one core,
// shared by the integration tests (and the observed audits Prometheus scrapes).
#ifndef MEMAUDIT_TESTS_INTEGRATION_TINY_SPECS_H_
#define MEMAUDIT_TESTS_INTEGRATION_TINY_SPECS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "memaudit/v1/spec.pb.h"

namespace memaudit::testing {

// A membership audit: `models` MLPs on a 200-example pool.
v1::AuditSpec TinyMembershipSpec(uint32_t models = 4, uint32_t epochs = 3);

// A spec file for the CLI: 4 logistic-regression models on 64 examples, one
// epoch, the loss attack.
std::string TinyMembershipYaml(const std::string& name);

// Pseudo-English lines from a fixed word list (about `chars` bytes).
std::string WordText(size_t chars);

// An exposure audit small enough for seconds: a 4-digit canary (|R| = 10^4)
// in 8 KB of word salad, inserted 1 and 40 times, 3 controls, 200 references.
v1::AuditSpec TinyExposureSpec();

// Membership of documents: 16 transformers (2 blocks of width 32, 4 heads),
// each trained 30 epochs on a random half of 240 sequences of 24 characters
// of fortunes (population 120): overfit, so members stand out.
v1::AuditSpec TinyDocumentsSpec();

// A forgetting audit (Inject, r = 1) of two trials, 50 injected examples,
// evaluated 0, 10, 50 and 400 steps after injection.
v1::AuditSpec TinyForgettingSpec();

// Unlearning on logistic regression, 5 originals x 20 deletions per side:
// sorted_diff and euclidean_distance with a random forest, full and
// label-only releases.
v1::AuditSpec TinyUnlearningSpec();

// Eight records with 4-digit numbers: a 64-unit LSTM learns the name ->
// number relation after a few dozen epochs (engine/relational_run_test.cc).
v1::AuditSpec TinyPhoneBookSpec();

// A dp_audit: 200 gradient canaries in 2 DP-SGD runs of a logistic
// regression at accountant epsilon 4 (1000 Fashion-MNIST rows).
v1::AuditSpec TinyDpAuditSpec();

// The linear model with N = 100 at d < N and d >> N.
v1::AuditSpec TinyLinearRelationalSpec();

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_TINY_SPECS_H_
