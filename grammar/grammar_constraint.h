// The JSON grammar (grammar.h) as the engine's Constraint (constraint.h):
// the reply's bytes must stay inside the grammar's language, and the reply
// ends as soon as nothing but its end may follow.
//
// A TokenVocabulary is built once per tokenizer (the first constrained
// request builds it: start-up does not pay for it) and shared by every
// constraint; a GrammarConstraint is one request's grammar over it.
// Thread-safety: both are immutable and may be shared across threads; a
// state made by start() belongs to its stream.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "grammar/grammar.h"
#include "grammar/token_mask.h"

namespace tf::grammar {

struct TokenVocabulary {
    TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_tokens);

    std::vector<std::string> bytes;  // per token id: what it adds to the text (empty: never allowed)
    std::vector<int32_t> end_tokens;
    TokenMasker masker;
};

class GrammarConstraint final : public engine::Constraint {
public:
    GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
        : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}

    std::unique_ptr<engine::ConstraintState> start() const override;

private:
    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
};

}  // namespace tf::grammar
