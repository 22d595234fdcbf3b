#include "engine/lm_search.h"

#include <cmath>
#include <map>
#include <queue>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace memaudit::engine {
namespace {

// A group of sibling-ordered trie nodes at one depth: their partial Px, their
// recurrent states and their next-token log-probs.
struct Frontier {
  size_t depth;
  std::vector<double> px;
  LmState state;
  torch::Tensor lp;  // [M, V] float64 CPU
  uint64_t first;    // lexicographic index of the first leaf below
};

uint64_t LeavesBelow(const TokenFormat& f, size_t depth) {
  uint64_t n = 1;
  for (size_t d = depth; d < f.length(); ++d) n *= f.positions[d].size();
  return n;
}

// Children of every node of `fr`: partial Px and (parent row, token).
void Children(const TokenFormat& f, const Frontier& fr, std::vector<double>* px,
              std::vector<int64_t>* rows, std::vector<int64_t>* tokens) {
  const auto& allowed = f.positions[fr.depth];
  auto lp = fr.lp.accessor<double, 2>();
  for (size_t i = 0; i < fr.px.size(); ++i) {
    for (int64_t t : allowed) {
      px->push_back(fr.px[i] - lp[i][t] / kLn2);
      rows->push_back(static_cast<int64_t>(i));
      tokens->push_back(t);
    }
  }
}

// Expands the children listed by `keep` (indices into px/rows/tokens) one
// model step each, in groups of at most max_states rows.
std::vector<Frontier> ExpandGroups(LmScorer& scorer, const Frontier& fr,
                                   const std::vector<double>& px, const std::vector<int64_t>& rows,
                                   const std::vector<int64_t>& tokens,
                                   const std::vector<size_t>& keep, size_t max_states,
                                   uint64_t leaves_per_child) {
  std::vector<Frontier> out;
  for (size_t start = 0; start < keep.size(); start += max_states) {
    const size_t end = std::min(keep.size(), start + max_states);
    Frontier child;
    child.depth = fr.depth + 1;
    child.first = fr.first + keep[start] * leaves_per_child;
    std::vector<int64_t> sel, toks;
    for (size_t k = start; k < end; ++k) {
      child.px.push_back(px[keep[k]]);
      sel.push_back(rows[keep[k]]);
      toks.push_back(tokens[keep[k]]);
    }
    child.state = fr.state.Select(torch::tensor(sel, torch::kLong));
    child.lp = scorer.Step(toks, &child.state);
    out.push_back(std::move(child));
  }
  return out;
}

Frontier Root(LmScorer& scorer, const TokenFormat& f) {
  Frontier root{0, {0.0}, LmState(), torch::Tensor(), 0};
  root.lp = scorer.Context(f.context, &root.state);
  return root;
}

absl::Status CheckFormat(const TokenFormat& f) {
  if (f.positions.empty()) return absl::InvalidArgumentError("format: no positions to score");
  for (size_t i = 0; i < f.positions.size(); ++i) {
    if (f.positions[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("format.positions[", i, "]: empty"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EnumeratePx(LmScorer& scorer, const TokenFormat& f, size_t max_states,
                         const PxChunkCallback& on_chunk) {
  MEMAUDIT_RETURN_IF_ERROR(CheckFormat(f));
  max_states = std::max<size_t>(max_states, 1);
  // Depth-first over frontier groups (a stack), breadth-first inside a group;
  // children are pushed in reverse so leaves come out in lexicographic order.
  std::vector<Frontier> stack;
  stack.push_back(Root(scorer, f));
  while (!stack.empty()) {
    Frontier fr = std::move(stack.back());
    stack.pop_back();
    std::vector<double> px;
    std::vector<int64_t> rows, tokens;
    Children(f, fr, &px, &rows, &tokens);
    if (fr.depth + 1 == f.length()) {
      on_chunk(fr.first, px);
      continue;
    }
    std::vector<size_t> all(px.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<Frontier> groups =
        ExpandGroups(scorer, fr, px, rows, tokens, all, max_states, LeavesBelow(f, fr.depth + 1));
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) stack.push_back(std::move(*it));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> EnumerateAllPx(LmScorer& scorer, const TokenFormat& f,
                                                   size_t max_states) {
  MEMAUDIT_RETURN_IF_ERROR(CheckFormat(f));
  const uint64_t total = LeavesBelow(f, 0);
  if (total > (uint64_t{1} << 27)) {
    return absl::InvalidArgumentError(
        absl::StrCat("format: ", total, " candidates; use EnumeratePx with a callback"));
  }
  std::vector<double> out(total);
  MEMAUDIT_RETURN_IF_ERROR(
      EnumeratePx(scorer, f, max_states, [&](uint64_t first, const std::vector<double>& px) {
        std::copy(px.begin(), px.end(), out.begin() + first);
      }));
  return out;
}

absl::StatusOr<uint64_t> CandidateIndex(const TokenFormat& f, const std::vector<int64_t>& tokens) {
  if (tokens.size() != f.length()) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate: ", tokens.size(), " tokens for ", f.length(), " positions"));
  }
  uint64_t index = 0;
  for (size_t d = 0; d < f.length(); ++d) {
    const auto& allowed = f.positions[d];
    auto it = std::find(allowed.begin(), allowed.end(), tokens[d]);
    if (it == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("candidate: token ", tokens[d], " not allowed at position ", d));
    }
    index = index * allowed.size() + (it - allowed.begin());
  }
  return index;
}

namespace {

// The others among `px` (candidates first, first + 1, ...) at or below
// `threshold`, the canary at `canary_index` left out.
uint64_t OthersAtOrBelow(const std::vector<double>& px, uint64_t first, uint64_t canary_index,
                         double threshold) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < px.size(); ++i) n += first + i != canary_index && px[i] <= threshold;
  return n;
}

}  // namespace

uint64_t RankAmong(const std::vector<double>& px, uint64_t canary_index, double canary_px) {
  return 1 + OthersAtOrBelow(px, 0, canary_index, canary_px + kPxTieBits);
}

absl::StatusOr<RankResult> EnumerationRank(LmScorer& scorer, const TokenFormat& f,
                                           const std::vector<int64_t>& canary, size_t max_states) {
  MEMAUDIT_ASSIGN_OR_RETURN(const uint64_t canary_index, CandidateIndex(f, canary));
  const uint64_t start = scorer.queries();
  RankResult r;
  r.canary_px = PathPxBits(scorer, f, canary);
  const double threshold = r.canary_px + kPxTieBits;
  r.rank = 1;  // the canary, by identity; the others by Px below
  MEMAUDIT_RETURN_IF_ERROR(
      EnumeratePx(scorer, f, max_states, [&](uint64_t first, const std::vector<double>& px) {
        r.rank += OthersAtOrBelow(px, first, canary_index, threshold);
      }));
  r.exact = true;
  r.queries = scorer.queries() - start;
  return r;
}

absl::StatusOr<RankResult> BranchAndBoundRank(LmScorer& scorer, const TokenFormat& f,
                                              const std::vector<int64_t>& canary,
                                              uint64_t query_budget, size_t max_states) {
  MEMAUDIT_RETURN_IF_ERROR(CandidateIndex(f, canary).status());
  max_states = std::max<size_t>(max_states, 1);
  const uint64_t start = scorer.queries();
  RankResult r;
  r.canary_px = PathPxBits(scorer, f, canary);
  const double threshold = r.canary_px + kPxTieBits;
  r.exact = true;
  r.rank = 1;  // the canary, by identity; the others by Px below
  // The canary's own leaf is left out of the count: `on_path` is the row of
  // each frontier that is a prefix of the canary (-1: none), so it is known
  // without trusting the trie's Px of it.
  struct Group {
    Frontier fr;
    int64_t on_path;
  };
  std::vector<Group> stack;
  stack.push_back({Root(scorer, f), 0});
  while (!stack.empty()) {
    Group g = std::move(stack.back());
    stack.pop_back();
    const Frontier& fr = g.fr;
    std::vector<double> px;
    std::vector<int64_t> rows, tokens;
    Children(f, fr, &px, &rows, &tokens);
    auto is_canary_prefix = [&](size_t i) {
      return rows[i] == g.on_path && tokens[i] == canary[fr.depth];
    };
    std::vector<size_t> keep;
    for (size_t i = 0; i < px.size(); ++i) {
      if (px[i] <= threshold) keep.push_back(i);  // terms are >= 0: the rest are pruned
    }
    if (fr.depth + 1 == f.length()) {
      for (size_t i : keep) r.rank += !is_canary_prefix(i);
      continue;
    }
    if (keep.empty()) continue;
    if (scorer.queries() - start + keep.size() > query_budget) {
      r.exact = false;
      break;
    }
    std::vector<Frontier> groups = ExpandGroups(scorer, fr, px, rows, tokens, keep, max_states, 0);
    // Group j holds keep[j * max_states ...]: find the canary's prefix there.
    for (size_t j = 0; j < groups.size(); ++j) {
      int64_t on_path = -1;
      for (size_t k = j * max_states; k < std::min(keep.size(), (j + 1) * max_states); ++k) {
        if (is_canary_prefix(keep[k])) on_path = static_cast<int64_t>(k - j * max_states);
      }
      stack.push_back({std::move(groups[j]), on_path});
    }
  }
  r.queries = scorer.queries() - start;
  return r;
}

ExtractionResult ShortestPathExtract(LmScorer& scorer, const TokenFormat& f, uint64_t max_queries,
                                     size_t pops_per_iteration) {
  struct Node {
    int64_t parent;
    int64_t token;
    size_t depth;
    double px;
    LmState state;     // set once expanded
    torch::Tensor lp;  // [V] log-probs of its children, set once expanded
  };
  ExtractionResult result;
  if (!CheckFormat(f).ok()) return result;
  const uint64_t start = scorer.queries();
  std::vector<Node> nodes;
  using Entry = std::pair<double, int64_t>;  // (px, node); min-heap
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push_children = [&](int64_t id) {
    // Copies, not references: push_back may move `nodes`.
    const torch::Tensor lp_tensor = nodes[id].lp;
    const size_t depth = nodes[id].depth;
    const double px = nodes[id].px;
    auto lp = lp_tensor.accessor<double, 1>();
    for (int64_t t : f.positions[depth]) {
      nodes.push_back({id, t, depth + 1, px - lp[t] / kLn2, LmState(), torch::Tensor()});
      queue.emplace(nodes.back().px, static_cast<int64_t>(nodes.size() - 1));
    }
  };
  Node root{-1, -1, 0, 0.0, LmState(), torch::Tensor()};
  root.lp = scorer.Context(f.context, &root.state).squeeze(0);
  nodes.push_back(std::move(root));
  push_children(0);

  uint64_t first_leaf_iteration = 0;
  int64_t best_leaf = -1;
  const size_t m = std::max<size_t>(pops_per_iteration, 1);
  while (!queue.empty()) {
    ++result.iterations;
    std::vector<int64_t> expand;
    while (!queue.empty() && expand.size() < m) {
      const int64_t id = queue.top().second;
      queue.pop();
      if (nodes[id].depth == f.length()) {
        if (best_leaf < 0 || nodes[id].px < nodes[best_leaf].px) best_leaf = id;
        if (first_leaf_iteration == 0) first_leaf_iteration = result.iterations;
        if (m == 1) break;  // exact: the first leaf popped is optimal
        continue;
      }
      expand.push_back(id);
    }
    if (m == 1 && best_leaf >= 0) break;
    if (m > 1 && first_leaf_iteration > 0 && result.iterations >= 2 * first_leaf_iteration) break;
    if (expand.empty()) continue;
    if (scorer.queries() - start + expand.size() > max_queries) break;
    // A popped batch mixes depths; states that grow with the prefix (keys,
    // tokens) concatenate only at equal length, so each length steps apart.
    // A recurrent state has one length: one step for the whole batch.
    std::map<int64_t, std::vector<int64_t>> by_length;
    for (int64_t id : expand) by_length[nodes[nodes[id].parent].state.Length()].push_back(id);
    for (const auto& [length, ids] : by_length) {
      std::vector<LmState> parents;
      std::vector<int64_t> tokens;
      for (int64_t id : ids) {
        parents.push_back(nodes[nodes[id].parent].state);
        tokens.push_back(nodes[id].token);
      }
      LmState state = LmState::Cat(parents);
      torch::Tensor lp = scorer.Step(tokens, &state);
      for (size_t k = 0; k < ids.size(); ++k) {
        Node& n = nodes[ids[k]];
        n.state = state.Select(torch::tensor({static_cast<int64_t>(k)}, torch::kLong));
        n.lp = lp[k];
        push_children(ids[k]);
      }
    }
  }
  result.queries = scorer.queries() - start;
  if (best_leaf >= 0) {
    result.found = true;
    result.px_bits = nodes[best_leaf].px;
    for (int64_t id = best_leaf; nodes[id].parent >= 0; id = nodes[id].parent) {
      result.tokens.insert(result.tokens.begin(), nodes[id].token);
    }
  }
  return result;
}

}  // namespace memaudit::engine
