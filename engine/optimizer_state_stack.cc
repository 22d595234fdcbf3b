#include "engine/optimizer_state_stack.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "engine/optimizer.h"

namespace memaudit::engine {
namespace {

using torch::optim::OptimizerParamState;

// The members' tensors of one state field, stacked along dim 0 in the
// stacked parameter's shape; undefined when no member has the field.
absl::StatusOr<torch::Tensor> StackField(const std::vector<torch::Tensor>& fields,
                                         const torch::Tensor& stacked_param,
                                         absl::string_view name) {
  size_t defined = 0;
  for (const auto& f : fields) defined += f.defined() ? 1 : 0;
  if (defined == 0) return torch::Tensor();
  if (defined != fields.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("optimizer state ", name, ": held by some members only"));
  }
  const auto member_shape = stacked_param.sizes().slice(1);
  std::vector<torch::Tensor> shaped;
  for (const auto& f : fields) shaped.push_back(f.detach().reshape(member_shape));
  return torch::stack(shaped).to(stacked_param.device());
}

template <typename State>
std::vector<const State*> MemberStates(const std::vector<const OptimizerParamState*>& states) {
  std::vector<const State*> out;
  for (const auto* s : states) out.push_back(static_cast<const State*>(s));
  return out;
}

template <typename State>
absl::Status SameStep(const std::vector<const State*>& states) {
  for (const auto* s : states) {
    if (s->step() != states[0]->step()) {
      return absl::FailedPreconditionError(
          absl::StrCat("optimizer state: members took different step counts (", states[0]->step(),
                       " and ", s->step(), ")"));
    }
  }
  return absl::OkStatus();
}

// Stacks one field, read from each member's state by `get`.
template <typename State, typename Get>
absl::StatusOr<torch::Tensor> Stacked(const std::vector<const State*>& states, Get get,
                                      const torch::Tensor& stacked_param, absl::string_view name) {
  std::vector<torch::Tensor> fields;
  for (const auto* s : states) fields.push_back(get(*s));
  return StackField(fields, stacked_param, name);
}

absl::StatusOr<std::unique_ptr<OptimizerParamState>> StackOne(
    OptimizerKind kind, const std::vector<const OptimizerParamState*>& states,
    const torch::Tensor& param) {
  switch (kind) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kMomentum: {
      using S = torch::optim::SGDParamState;
      auto m = MemberStates<S>(states);
      MEMAUDIT_ASSIGN_OR_RETURN(
          auto buf, Stacked(
                        m, [](const S& s) { return s.momentum_buffer(); }, param, "momentum"));
      auto out = std::make_unique<S>();
      out->momentum_buffer(buf);
      return out;
    }
    case OptimizerKind::kAdam: {
      using S = torch::optim::AdamParamState;
      auto m = MemberStates<S>(states);
      MEMAUDIT_RETURN_IF_ERROR(SameStep(m));
      auto avg = Stacked(
          m, [](const S& s) { return s.exp_avg(); }, param, "exp_avg");
      auto sq = Stacked(
          m, [](const S& s) { return s.exp_avg_sq(); }, param, "exp_avg_sq");
      auto max_sq = Stacked(
          m, [](const S& s) { return s.max_exp_avg_sq(); }, param, "max_exp_avg_sq");
      for (const auto* r : {&avg, &sq, &max_sq}) {
        if (!r->ok()) return r->status();
      }
      auto out = std::make_unique<S>();
      out->step(m[0]->step());
      out->exp_avg(*avg);
      out->exp_avg_sq(*sq);
      out->max_exp_avg_sq(*max_sq);
      return out;
    }
    case OptimizerKind::kRmsProp: {
      using S = torch::optim::RMSpropParamState;
      auto m = MemberStates<S>(states);
      MEMAUDIT_RETURN_IF_ERROR(SameStep(m));
      auto sq = Stacked(
          m, [](const S& s) { return s.square_avg(); }, param, "square_avg");
      auto buf = Stacked(
          m, [](const S& s) { return s.momentum_buffer(); }, param, "momentum");
      auto avg = Stacked(
          m, [](const S& s) { return s.grad_avg(); }, param, "grad_avg");
      for (const auto* r : {&sq, &buf, &avg}) {
        if (!r->ok()) return r->status();
      }
      auto out = std::make_unique<S>();
      out->step(m[0]->step());
      out->square_avg(*sq);
      out->momentum_buffer(*buf);
      out->grad_avg(*avg);
      return out;
    }
  }
  return absl::InvalidArgumentError("optimizer.kind: unknown");
}

}  // namespace

absl::Status StackOptimizerState(OptimizerKind kind,
                                 const std::vector<const torch::optim::Optimizer*>& from,
                                 const std::vector<std::vector<torch::Tensor>>& from_params,
                                 torch::optim::Optimizer& to,
                                 const std::vector<torch::Tensor>& to_params) {
  if (from.size() != from_params.size() || from.empty()) {
    return absl::InvalidArgumentError("optimizer state: one parameter list per member");
  }
  for (size_t i = 0; i < to_params.size(); ++i) {
    std::vector<const OptimizerParamState*> states;
    for (size_t k = 0; k < from.size(); ++k) {
      if (from_params[k].size() != to_params.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("optimizer state: member ", k, " has another architecture"));
      }
      const auto& map = from[k]->state();
      auto it = map.find(StateKeyOf(from_params[k][i]));
      if (it != map.end()) states.push_back(it->second.get());
    }
    if (states.empty()) continue;  // no member has stepped this parameter yet
    if (states.size() != from.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat("optimizer state of parameter ", i, ": held by some members only"));
    }
    MEMAUDIT_ASSIGN_OR_RETURN(auto stacked, StackOne(kind, states, to_params[i]));
    to.state()[StateKeyOf(to_params[i])] = std::move(stacked);
  }
  return absl::OkStatus();
}

}  // namespace memaudit::engine
