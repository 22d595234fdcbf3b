// Small valid specs for tests of the spec rules and the services.
#ifndef MEMAUDIT_SPEC_TEST_SPECS_H_
#define MEMAUDIT_SPEC_TEST_SPECS_H_

#include "memaudit/v1/spec.pb.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

inline v1::AuditSpec SmallMembershipSpec(uint32_t models = 4) {
  v1::AuditSpec spec;
  spec.set_name("small");
  spec.set_seed(7);
  v1::MembershipAudit* m = spec.mutable_membership();
  m->mutable_dataset()->set_pool_size(100);
  m->mutable_model()->add_hidden(16);
  m->mutable_training()->set_learning_rate(0.1);
  m->mutable_training()->set_momentum(0.9);
  m->mutable_training()->set_epochs(2);
  m->mutable_training()->set_batch_size(10);
  m->set_reference_models(models);
  // One task per model (auto would pack these small models): the tests
  // count and lease tasks one model at a time.
  spec.mutable_resources()->set_models_per_task(1);
  ApplyDefaults(&spec);
  return spec;
}

// 10 lines of 10 characters (100 characters); canaries "pin " + 3 digits +
// newline, inserted 2 and 8 times; windows of 16, batches of 4, 3 epochs.
// Without defaults for tests of what ApplyDefaults derives from other fields.
inline v1::AuditSpec SmallExposureSpec(bool with_defaults = true) {
  v1::AuditSpec spec;
  spec.set_name("small-exposure");
  spec.set_seed(7);
  v1::ExposureAudit* e = spec.mutable_exposure();
  std::string text;
  for (int i = 0; i < 10; ++i) text += "abcdefghi\n";
  e->mutable_corpus()->set_text(text);
  e->mutable_canary()->set_prefix("pin ");
  e->mutable_canary()->set_digits(3);
  e->add_repeats(2);
  e->add_repeats(8);
  e->mutable_training()->set_window(16);
  e->mutable_training()->set_batch_size(4);
  e->mutable_training()->set_epochs(3);
  if (with_defaults) ApplyDefaults(&spec);
  return spec;
}

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_TEST_SPECS_H_
