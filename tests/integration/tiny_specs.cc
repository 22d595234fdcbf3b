#include "tests/integration/tiny_specs.h"

#include <string>

#include "common/base/seeding.h"

namespace memaudit::testing {

v1::AuditSpec TinyMembershipSpec(uint32_t models, uint32_t epochs) {
  v1::AuditSpec spec;
  spec.set_name("tiny");
  spec.set_seed(11);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(200);
  m->mutable_model()->add_hidden(32);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_momentum(0.9);
  m->mutable_training()->set_epochs(epochs);
  m->mutable_training()->set_batch_size(16);
  m->set_reference_models(models);
  // One task per model (auto would pack these small models): the tests
  // count, lease and interrupt tasks one model at a time.
  spec.mutable_resources()->set_models_per_task(1);
  return spec;
}

v1::AuditSpec TinyDocumentsSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-documents");
  spec.set_seed(3);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(16);
  m->set_population_size(120);
  v1::MembershipDocuments* d = m->mutable_documents();
  d->mutable_corpus()->set_max_chars(40000);
  d->set_sequence_tokens(24);
  d->set_pool_size(240);
  v1::LanguageModelSpec* model = d->mutable_model();
  model->set_architecture("transformer");
  model->set_layers(2);
  model->set_embedding(32);
  model->set_units(64);
  model->set_heads(4);
  d->mutable_training()->set_epochs(30);
  d->mutable_training()->set_batch_size(16);
  d->mutable_training()->set_learning_rate(0.003);
  return spec;
}

v1::AuditSpec TinyUnlearningSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-unlearning");
  spec.set_seed(2026);
  v1::UnlearningAudit* u = spec.mutable_unlearning();
  u->mutable_dataset()->set_pool_size(2000);
  v1::UnlearningTraining* t = u->mutable_training();
  t->set_optimizer("sgd");
  t->set_learning_rate(0.05);
  t->set_epochs(10);
  t->set_batch_size(64);
  for (v1::UnlearningSide* s : {u->mutable_shadow(), u->mutable_target()}) {
    s->set_originals(5);
    s->set_samples(400);
    s->set_unlearned(20);
  }
  u->add_features("sorted_diff");
  u->add_features("euclidean_distance");
  u->add_attack_classifiers("random_forest");
  u->add_defenses("none");
  u->add_defenses("label_only");
  return spec;
}

v1::AuditSpec TinyDpAuditSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-dp-audit");
  spec.set_seed(7);
  v1::DpAudit* d = spec.mutable_dp_audit();
  d->mutable_dataset()->set_pool_size(1000);
  d->mutable_training()->set_learning_rate(0.5);
  d->mutable_training()->set_epochs(2);
  d->mutable_training()->set_batch_size(100);
  d->mutable_dp_sgd()->set_target_epsilon(4);
  d->set_canaries(200);
  d->set_canary_type("gradient");
  d->set_runs(2);
  // A gate, so the dashboard's gate panel has a verdict to show.
  v1::Gate* gate = spec.add_gates();
  gate->set_metric("epsilon_lower");
  gate->set_max(4);
  return spec;
}

v1::AuditSpec TinyPhoneBookSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-phone-book");
  spec.set_seed(5);
  v1::PhoneBookSpec* p = spec.mutable_relational()->mutable_phone_book();
  p->set_records(8);
  p->set_validation_records(8);
  p->set_digits(4);
  p->mutable_model()->set_units(64);
  p->mutable_model()->set_embedding(16);
  p->mutable_training()->set_learning_rate(0.02);
  p->mutable_training()->set_batch_size(4);
  p->mutable_training()->set_epochs(80);
  return spec;
}

v1::AuditSpec TinyLinearRelationalSpec() {
  v1::AuditSpec spec;
  spec.set_name("linear");
  spec.set_seed(6);
  v1::LinearRelationalSpec* l = spec.mutable_relational()->mutable_linear();
  l->set_samples(100);
  l->set_label_dims(5);
  l->add_key_dims(20);    // d = 25 < N
  l->add_key_dims(2000);  // d >> N
  return spec;
}

// Pseudo-English lines from a fixed word list (about `chars` bytes).
std::string WordText(size_t chars) {
  static const char* kWords[] = {"the",  "cat",  "sat",  "on",    "a",     "mat",   "and",
                                 "dog",  "ran",  "far",  "from",  "home",  "while", "rain",
                                 "fell", "over", "hill", "river", "stone", "light"};
  SplitMix64 rng(11);
  std::string text, line;
  while (text.size() < chars) {
    line += kWords[rng.Uniform(20)];
    if (line.size() > 40) {
      text += line + "\n";
      line.clear();
    } else {
      line += " ";
    }
  }
  return text;
}

v1::AuditSpec TinyExposureSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-exposure");
  spec.set_seed(5);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_text(WordText(8000));
  e->mutable_model()->set_units(48);
  e->mutable_model()->set_embedding(16);
  e->mutable_training()->set_learning_rate(0.01);
  e->mutable_training()->set_epochs(6);
  e->mutable_training()->set_batch_size(16);
  e->mutable_training()->set_window(48);
  e->mutable_canary()->set_prefix("pin ");
  e->mutable_canary()->set_digits(4);  // |R| = 10^4: exact ranks in a blink
  e->add_repeats(1);
  e->add_repeats(40);
  e->set_controls(3);
  e->set_estimator("all");
  e->set_reference_samples(200);
  return spec;
}

v1::AuditSpec TinyForgettingSpec() {
  v1::AuditSpec spec;
  spec.set_name("tiny-forgetting");
  spec.set_seed(21);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_dataset()->set_pool_size(2000);
  f->mutable_training()->set_batch_size(64);
  f->mutable_training()->set_steps_before_injection(200);
  f->mutable_training()->set_steps_after_injection(400);
  f->mutable_injected()->set_size(50);
  f->set_trials(2);
  for (uint64_t p : {0, 10, 50, 400}) f->add_eval_points(p);
  return spec;
}

std::string TinyMembershipYaml(const std::string& name) {
  return "name: " + name + R"(
seed: 5
membership:
  dataset: { pool_size: 64 }
  model: { architecture: mlp, hidden: [] }
  training: { epochs: 1, batch_size: 32, learning_rate: 0.1 }
  reference_models: 4
  attacks: [loss]
)";
}

}  // namespace memaudit::testing
