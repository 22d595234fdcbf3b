#include "engine/lm_scorer.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"

namespace memaudit::engine {
namespace {

torch::Tensor ToDeviceIds(const std::vector<int64_t>& ids, torch::Device device) {
  return torch::tensor(ids, torch::kLong).to(device);
}

// Where the model's parameters are (the CPU for a model without any).
torch::Device ModelDevice(LanguageModel& model) {
  return model.parameters().empty() ? torch::kCPU : model.parameters()[0].device();
}

// Rows [first, end) of `ids` (all of one length) as one int64 batch [B, L].
torch::Tensor StackIds(const std::vector<std::vector<int64_t>>& ids, size_t first, size_t end) {
  std::vector<torch::Tensor> rows;
  for (size_t i = first; i < end; ++i) rows.push_back(torch::tensor(ids[i], torch::kLong));
  return torch::stack(rows);
}

// The line every canary is spelled in: after a newline, as in the corpus.
std::vector<int64_t> CanaryLine(const Tokenizer& tokenizer, const CanaryFormat& format,
                                const std::string& secret) {
  return tokenizer.Encode("\n" + CanaryText(format, secret));
}

}  // namespace

size_t SharedPrefixLength(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                             a.begin());
}

absl::StatusOr<TokenFormat> ToTokenFormat(const Tokenizer& tokenizer, const CanaryFormat& format) {
  std::vector<std::vector<char32_t>> alphabets;
  for (size_t i = 0; i < format.alphabets.size(); ++i) {
    alphabets.push_back(DecodeUtf8(format.alphabets[i]));
    if (alphabets.back().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("format.alphabets[", i, "]: empty"));
    }
  }
  std::vector<char32_t> first;  // every hole's first character
  for (const auto& a : alphabets) first.push_back(a[0]);
  const std::vector<int64_t> line = CanaryLine(tokenizer, format, EncodeUtf8(first));
  // The context: the tokens the line shares with its prefix spelled alone
  // (a tokenizer may join the prefix's last characters with what follows).
  const size_t context = SharedPrefixLength(tokenizer.Encode("\n" + format.prefix), line);
  TokenFormat out;
  out.context.assign(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(context));
  for (size_t t = context; t < line.size(); ++t) out.positions.push_back({line[t]});
  // Each hole character, alone in its hole, must change exactly one token
  // past the context, the same one for the whole alphabet, in hole order:
  // then every filling of R is spelled hole by hole and its ids enumerate.
  size_t last = context;  // the first position the next hole may take
  for (size_t i = 0; i < alphabets.size(); ++i) {
    if (alphabets[i].size() == 1) continue;  // a fixed character
    std::optional<size_t> at;
    std::vector<int64_t> allowed = {0};  // the first character's, set below
    for (size_t a = 1; a < alphabets[i].size(); ++a) {
      std::vector<char32_t> filled = first;
      filled[i] = alphabets[i][a];
      const std::vector<int64_t> varied = CanaryLine(tokenizer, format, EncodeUtf8(filled));
      std::vector<size_t> changed;
      for (size_t t = 0; t < line.size() && varied.size() == line.size(); ++t) {
        if (varied[t] != line[t]) changed.push_back(t);
      }
      if (changed.size() != 1 || changed[0] < context || (at && changed[0] != *at)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "format.alphabets[", i, "]: ", tokenizer.Describe(), " does not spell ",
            EncodeUtf8({alphabets[i][a]}),
            " as a token of its own in this hole, so the canary space cannot be enumerated "
            "token by token (use digit holes: memaudit's SentencePiece tokenizers split digits)"));
      }
      at = changed[0];
      allowed.push_back(varied[*at]);
    }
    if (*at < last) {
      return absl::InvalidArgumentError(
          absl::StrCat("format.alphabets[", i, "]: ", tokenizer.Describe(),
                       " does not give this hole a token of its own after the previous hole's"));
    }
    allowed[0] = line[*at];
    for (size_t a = 0; a < allowed.size(); ++a) {
      if (tokenizer.IsUnknown(allowed[a])) {
        return absl::InvalidArgumentError(absl::StrCat("format.alphabets[", i, "]: character U+",
                                                       static_cast<uint32_t>(alphabets[i][a]),
                                                       " is not in the vocabulary"));
      }
      for (size_t b = 0; b < a; ++b) {
        if (allowed[a] == allowed[b]) {
          return absl::InvalidArgumentError(
              absl::StrCat("format.alphabets[", i, "]: two characters share one token"));
        }
      }
    }
    out.positions[*at - context] = std::move(allowed);
    last = *at + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> SecretTokens(const Tokenizer& tokenizer,
                                                  const TokenFormat& tokens,
                                                  const CanaryFormat& format,
                                                  const std::string& secret) {
  const std::vector<int64_t> line = CanaryLine(tokenizer, format, secret);
  const size_t context = tokens.context.size();
  bool fits = line.size() == context + tokens.length() &&
              std::equal(tokens.context.begin(), tokens.context.end(), line.begin()) &&
              DecodeUtf8(secret).size() == format.alphabets.size();
  for (size_t p = 0; fits && p < tokens.length(); ++p) {
    const std::vector<int64_t>& allowed = tokens.positions[p];
    fits = std::find(allowed.begin(), allowed.end(), line[context + p]) != allowed.end();
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret: '", secret, "' does not fill the format's holes"));
  }
  return std::vector<int64_t>(line.begin() + static_cast<std::ptrdiff_t>(context), line.end());
}

LmScorer::LmScorer(LanguageModel& model) : model_(model), device_(ModelDevice(model)) {
  model_.eval();
}

torch::Tensor LmScorer::Context(const std::vector<int64_t>& context, LmState* state) {
  torch::NoGradGuard no_grad;
  *state = LmState();
  torch::Tensor logits = model_.Run(ToDeviceIds(context, device_).unsqueeze(0), state);
  ++queries_;
  return torch::log_softmax(logits.select(1, logits.size(1) - 1).to(torch::kFloat64), 1).cpu();
}

torch::Tensor LmScorer::Step(const std::vector<int64_t>& tokens, LmState* state) {
  queries_ += tokens.size();
  return model_.StepLogProbs(ToDeviceIds(tokens, device_), state).cpu();
}

std::vector<TokenLogProbs> TextLogProbs(LanguageModel& model,
                                        const std::vector<std::vector<int64_t>>& texts,
                                        int64_t start, size_t batch) {
  torch::NoGradGuard no_grad;
  const torch::Device device = ModelDevice(model);
  std::vector<TokenLogProbs> out;
  batch = std::max<size_t>(batch, 1);
  for (size_t first = 0; first < texts.size(); first += batch) {
    const size_t end = std::min(texts.size(), first + batch);
    const torch::Tensor targets = StackIds(texts, first, end);  // [B, L]
    const torch::Tensor inputs = torch::cat(
        {torch::full({targets.size(0), 1}, start, torch::kLong), targets.slice(1, 0, -1)}, 1);
    LmState state;
    const torch::Tensor log_p =
        torch::log_softmax(model.Run(inputs.to(device), &state).to(torch::kFloat64), 2).cpu();
    const torch::Tensor p = log_p.exp();
    const torch::Tensor mean = (p * log_p).sum(2);
    const torch::Tensor stddev = ((p * log_p * log_p).sum(2) - mean * mean).clamp_min(0).sqrt();
    const torch::Tensor chosen = log_p.gather(2, targets.unsqueeze(2)).squeeze(2);
    const auto lp = chosen.accessor<double, 2>();
    const auto mu = mean.accessor<double, 2>();
    const auto sd = stddev.accessor<double, 2>();
    for (int64_t i = 0; i < targets.size(0); ++i) {
      TokenLogProbs t;
      for (int64_t j = 0; j < targets.size(1); ++j) {
        t.log_prob.push_back(lp[i][j]);
        t.mean.push_back(mu[i][j]);
        t.stddev.push_back(sd[i][j]);
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> GreedyContinuations(
    LanguageModel& model, const std::vector<std::vector<int64_t>>& prompts, size_t length,
    size_t batch) {
  torch::NoGradGuard no_grad;
  const torch::Device device = ModelDevice(model);
  std::vector<std::vector<int64_t>> out;
  if (length == 0) return std::vector<std::vector<int64_t>>(prompts.size());
  for (size_t start = 0; start < prompts.size(); start += std::max<size_t>(batch, 1)) {
    const size_t end = std::min(prompts.size(), start + std::max<size_t>(batch, 1));
    LmState state;
    torch::Tensor next =
        model.Run(StackIds(prompts, start, end).to(device), &state).select(1, -1).argmax(1);
    std::vector<torch::Tensor> steps;
    for (size_t t = 0; t < length; ++t) {
      steps.push_back(next);
      if (t + 1 < length) next = model.Run(next.unsqueeze(1), &state).squeeze(1).argmax(1);
    }
    const torch::Tensor decoded = torch::stack(steps, 1).to(torch::kCPU, torch::kLong).contiguous();
    const auto ids = decoded.accessor<int64_t, 2>();
    for (size_t i = 0; i < end - start; ++i) {
      std::vector<int64_t> tokens(length);
      for (size_t t = 0; t < length; ++t)
        tokens[t] = ids[static_cast<int64_t>(i)][static_cast<int64_t>(t)];
      out.push_back(std::move(tokens));
    }
  }
  return out;
}

double PathPxBits(LmScorer& scorer, const TokenFormat& format, const std::vector<int64_t>& tokens) {
  LmState state;
  torch::Tensor lp = scorer.Context(format.context, &state);
  double px = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    px -= lp[0][tokens[i]].item<double>() / kLn2;
    if (i + 1 < tokens.size()) lp = scorer.Step({tokens[i]}, &state);
  }
  return px;
}

std::vector<double> NaivePxBits(LmScorer& scorer, const TokenFormat& format,
                                const std::vector<std::vector<int64_t>>& candidates, size_t batch) {
  torch::NoGradGuard no_grad;
  std::vector<double> out;
  const int64_t c = static_cast<int64_t>(format.context.size());
  const int64_t k = static_cast<int64_t>(format.length());
  for (size_t start = 0; start < candidates.size(); start += batch) {
    const size_t end = std::min(candidates.size(), start + batch);
    std::vector<int64_t> flat;
    for (size_t i = start; i < end; ++i) {
      flat.insert(flat.end(), format.context.begin(), format.context.end());
      flat.insert(flat.end(), candidates[i].begin(), candidates[i].end() - 1);
    }
    const int64_t m = static_cast<int64_t>(end - start);
    torch::Tensor x = torch::tensor(flat, torch::kLong).reshape({m, c + k - 1});
    LmState state;
    torch::Tensor logits =
        scorer.model().Run(x.to(scorer.model().parameters()[0].device()), &state);
    torch::Tensor lp = torch::log_softmax(logits.slice(1, c - 1).to(torch::kFloat64), 2).cpu();
    for (int64_t i = 0; i < m; ++i) {
      double px = 0;
      for (int64_t j = 0; j < k; ++j)
        px -= lp[i][j][candidates[start + i][j]].item<double>() / kLn2;
      out.push_back(px);
    }
  }
  return out;
}

Completion GreedyComplete(LmScorer& scorer, const TokenFormat& format) {
  return BeamComplete(scorer, format, 1);
}

Completion BeamComplete(LmScorer& scorer, const TokenFormat& format, size_t width) {
  struct Hyp {
    std::vector<int64_t> tokens;
    double px;
    int64_t row;  // row of its parent's log-probs
  };
  LmState state;
  torch::Tensor lp = scorer.Context(format.context, &state);
  std::vector<Hyp> beam = {{{}, 0.0, 0}};
  for (size_t pos = 0; pos < format.length(); ++pos) {
    std::vector<Hyp> next;
    auto acc = lp.accessor<double, 2>();
    for (size_t h = 0; h < beam.size(); ++h) {
      for (int64_t t : format.positions[pos]) {
        Hyp child{beam[h].tokens, beam[h].px - acc[h][t] / kLn2, static_cast<int64_t>(h)};
        child.tokens.push_back(t);
        next.push_back(std::move(child));
      }
    }
    std::stable_sort(next.begin(), next.end(),
                     [](const Hyp& a, const Hyp& b) { return a.px < b.px; });
    if (next.size() > width) next.resize(width);
    beam = std::move(next);
    if (pos + 1 == format.length()) break;
    std::vector<int64_t> rows, tokens;
    for (const Hyp& h : beam) {
      rows.push_back(h.row);
      tokens.push_back(h.tokens.back());
    }
    state = state.Select(torch::tensor(rows, torch::kLong));
    lp = scorer.Step(tokens, &state);
  }
  return {beam[0].tokens, beam[0].px};
}

std::vector<ExtractableSequence> MeasureExtractable(LanguageModel& lm, const Tokenizer& vocab,
                                                    const ExtractableSetup& setup,
                                                    const std::vector<std::string>& held_out,
                                                    bool decode) {
  const bool was_training = lm.is_training();
  lm.eval();
  const int64_t newline = vocab.Newline();
  std::vector<std::vector<int64_t>> texts, prompts;
  for (const std::string& sequence : held_out) {
    const std::vector<int64_t>& ids = texts.emplace_back(vocab.Encode(sequence));
    std::vector<int64_t> prompt = {newline};
    prompt.insert(prompt.end(), ids.begin(), ids.begin() + setup.prefix);
    prompts.push_back(std::move(prompt));
  }
  const std::vector<std::vector<int64_t>> decoded =
      decode ? GreedyContinuations(lm, prompts, setup.suffix)
             : std::vector<std::vector<int64_t>>(prompts.size());
  const std::vector<TokenLogProbs> log_probs = TextLogProbs(lm, texts, newline);
  std::vector<ExtractableSequence> out;
  for (size_t i = 0; i < held_out.size(); ++i) {
    ExtractableSequence s;
    s.duplicates = DuplicatesOf(setup, i);
    s.membership = MembershipScores(log_probs[i], held_out[i]);
    // The continuation is the text past the prompt.
    const std::vector<int64_t>& text = texts[i];
    while (decode && s.matched < setup.suffix &&
           decoded[i][s.matched] == text[setup.prefix + s.matched]) {
      ++s.matched;
    }
    s.extracted = decode && s.matched == setup.suffix;
    out.push_back(s);
  }
  if (was_training) lm.train();
  return out;
}

}  // namespace memaudit::engine
