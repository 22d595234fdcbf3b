// Small valid specs for coordinator tests.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_TEST_SPECS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_TEST_SPECS_H_

#include "memaudit/v1/spec.pb.h"
#include "services/coordinator/spec_validator.h"

namespace memaudit::coordinator {

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
  ApplyDefaults(&spec);
  return spec;
}

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_TEST_SPECS_H_
